package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	_ "image/png" // screenshots are often PNG
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
)

// DropDir is where, inside a workspace, an agent may drop images for the
// reply (seed 004's handoff); the runner takes them after each run.
const DropDir = "tmp/ai_screenshots"

const (
	// screenshotMaxFile is the largest image file the runner reads.
	screenshotMaxFile = 32 << 20
	// screenshotMaxBytes is the ceiling of a stored image: it fits every
	// channel (MMS takes 1 MB, WhatsApp 5 MB).
	screenshotMaxBytes = 600 << 10
	// screenshotsPerRun caps the images one run may send.
	screenshotsPerRun = 10
)

// errOutside: a screenshot path that is not a file inside the workspace.
var errOutside = errors.New("not a file inside the workspace")

// readScreenshot reads the image at p (relative to the workspace dir, or
// absolute) if, with every symlink followed, it is a regular PNG or JPEG
// file inside dir. The check is made on the opened file, so swapping the
// path after the check cannot point it elsewhere.
func readScreenshot(dir, p string) ([]byte, error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	full := p
	if !filepath.IsAbs(full) {
		full = filepath.Join(dir, full)
	}
	f, err := os.Open(full)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Where the opened file really is, whatever links led to it.
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil {
		return nil, err
	}
	if rel, err := filepath.Rel(root, real); err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, fmt.Errorf("%s: %w", p, errOutside)
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w", p, errOutside)
	}
	data, err := io.ReadAll(io.LimitReader(f, screenshotMaxFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > screenshotMaxFile {
		return nil, fmt.Errorf("%s: larger than %d bytes", p, screenshotMaxFile)
	}
	if ct := http.DetectContentType(data); ct != "image/png" && ct != "image/jpeg" {
		return nil, fmt.Errorf("%s: %s, not a PNG or JPEG image", p, ct)
	}
	return data, nil
}

// dropped lists the files agents left in the workspace's DropDir, oldest
// first, as paths relative to the workspace.
func dropped(dir string) []string {
	entries, err := os.ReadDir(filepath.Join(dir, DropDir))
	if err != nil {
		return nil
	}
	type file struct {
		name string
		at   int64
	}
	var files []file
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && !e.IsDir() {
			files = append(files, file{e.Name(), fi.ModTime().UnixNano()})
		}
	}
	slices.SortFunc(files, func(a, b file) int { return int(a.at - b.at) })
	var out []string
	for _, f := range files {
		out = append(out, filepath.Join(DropDir, f.name))
	}
	return out
}

// collectScreenshots stores the images a run reported (its
// SCREENSHOT_CAPTURED lines, then the files in DropDir, which are removed)
// as compressed JPEGs, publishes an image event for each, and returns
// them. Paths outside the workspace, non-images and unreadable files are
// refused and logged.
func (r *Runner) collectScreenshots(ctx context.Context, log zerolog.Logger, job contract.Job, dir string, reported []string) []contract.Image {
	paths := append(slices.Clone(reported), dropped(dir)...)
	if len(paths) == 0 {
		return nil
	}
	store, err := r.js.ObjectStore(ctx, contract.BucketMedia)
	if err != nil {
		log.Error().Err(err).Msg("media store; screenshots dropped")
		return nil
	}
	var images []contract.Image
	seen := map[string]bool{}
	for _, p := range paths {
		if seen[p] {
			continue
		}
		seen[p] = true
		if strings.HasPrefix(filepath.Clean(p), DropDir+"/") {
			defer os.Remove(filepath.Join(dir, p))
		}
		if len(images) == screenshotsPerRun {
			log.Warn().Str("path", p).Int("max", screenshotsPerRun).Msg("screenshot skipped: too many in one run")
			continue
		}
		data, err := readScreenshot(dir, p)
		if err != nil {
			log.Warn().Err(err).Str("path", p).Msg("screenshot refused")
			continue
		}
		s, err := compress(data, screenshotMaxBytes)
		if err != nil {
			log.Warn().Err(err).Str("path", p).Msg("screenshot not compressed")
			continue
		}
		img, err := contract.PutImage(ctx, store, "image/jpeg", s.jpeg)
		if err != nil {
			log.Error().Err(err).Msg("screenshot not stored")
			continue
		}
		img.Width, img.Height = s.width, s.height
		ev := contract.Event{Kind: contract.KindImage, User: job.User, JobID: job.ID, Image: &img}
		if err := contract.PublishEvent(ctx, r.js, ev, contract.MsgID(job.User, job.ID, "image", strconv.Itoa(len(images)+1))); err != nil {
			log.Warn().Err(err).Msg("image event")
		}
		log.Info().Str("path", p).Str("object", img.ID).Int("size", img.Size).Int("width", img.Width).Int("height", img.Height).Msg("screenshot stored")
		images = append(images, img)
	}
	return images
}

// compressed is an image re-encoded as JPEG.
type compressed struct {
	jpeg          []byte
	width, height int
}

// compress re-encodes a PNG or JPEG as a JPEG of at most maxBytes: quality
// 75, then 50, then at half the size, and so on.
func compress(data []byte, maxBytes int) (compressed, error) {
	src, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return compressed{}, fmt.Errorf("decode image: %w", err)
	}
	for {
		b := src.Bounds()
		for _, q := range []int{75, 50} {
			var buf bytes.Buffer
			if err := jpeg.Encode(&buf, src, &jpeg.Options{Quality: q}); err != nil {
				return compressed{}, err
			}
			if buf.Len() <= maxBytes {
				return compressed{jpeg: buf.Bytes(), width: b.Dx(), height: b.Dy()}, nil
			}
		}
		if b.Dx() < 32 || b.Dy() < 32 {
			return compressed{}, fmt.Errorf("cannot get a %dx%d image under %d bytes", b.Dx(), b.Dy(), maxBytes)
		}
		src = half(src)
	}
}

// half scales img to half its width and height, averaging 2×2 pixels.
func half(img image.Image) image.Image {
	b := img.Bounds()
	dst := image.NewRGBA(image.Rect(0, 0, b.Dx()/2, b.Dy()/2))
	for y := range dst.Rect.Dy() {
		for x := range dst.Rect.Dx() {
			var r, g, bl, a uint32
			for _, d := range [4][2]int{{0, 0}, {1, 0}, {0, 1}, {1, 1}} {
				cr, cg, cb, ca := img.At(b.Min.X+2*x+d[0], b.Min.Y+2*y+d[1]).RGBA()
				r, g, bl, a = r+cr, g+cg, bl+cb, a+ca
			}
			dst.SetRGBA(x, y, color.RGBA{uint8(r / 4 >> 8), uint8(g / 4 >> 8), uint8(bl / 4 >> 8), uint8(a / 4 >> 8)})
		}
	}
	return dst
}
