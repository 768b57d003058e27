package runner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/shot"
)

// DropDir is where, inside a workspace, an agent may drop images for the
// reply (seed 004's handoff); the runner takes them after each run.
const DropDir = "tmp/ai_screenshots"

const (
	// screenshotMaxFile is the largest image file the runner reads.
	screenshotMaxFile = 32 << 20
	// screenshotMaxBytes is the ceiling of a stored image: it fits every
	// channel (MMS takes 1 MB, WhatsApp 5 MB).
	screenshotMaxBytes = shot.DefaultMaxBytes
	// screenshotsPerRun caps the images one run may send.
	screenshotsPerRun = 10
)

// errOutside: a screenshot path that is not a file inside the workspace.
var errOutside = errors.New("not a file inside the workspace")

// errTooLarge: a file larger than the runner takes.
var errTooLarge = errors.New("too large")

// workspacePath is p (relative to the workspace dir, or absolute) relative
// to dir, or errOutside when it names a place outside dir (or dir itself).
// Only a first check: links are resolved by readBeneath.
func workspacePath(dir, p string) (string, error) {
	rel := p
	if filepath.IsAbs(p) {
		var err error
		if rel, err = filepath.Rel(dir, p); err != nil {
			return "", fmt.Errorf("%s: %w", p, errOutside)
		}
	}
	if rel = filepath.Clean(rel); rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("%s: %w", p, errOutside)
	}
	return rel, nil
}

// readScreenshot reads the image at p (relative to the workspace dir, or
// absolute) if it is a regular PNG or JPEG file inside dir: a path outside
// it is refused unopened, and links are followed only while they stay
// inside (readBeneath), so textslash opens nothing else of the machine an
// agent names (a device acting on open, a FIFO).
func readScreenshot(dir, p string) ([]byte, error) {
	rel, err := workspacePath(dir, p)
	if err != nil {
		return nil, err
	}
	data, err := readBeneath(dir, rel, screenshotMaxFile)
	if err != nil {
		return nil, err // a link out of dir: os.Root's "path escapes from parent"
	}
	if ct := http.DetectContentType(data); ct != "image/png" && ct != "image/jpeg" {
		return nil, fmt.Errorf("%s: %s, not a PNG or JPEG image", p, ct)
	}
	return data, nil
}

// dropped lists the files agents left in the workspace's DropDir, oldest
// first, as paths relative to the workspace.
func dropped(dir string) []string {
	entries, err := readDirBeneath(dir, DropDir)
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
// as compressed JPEGs, at most room of them, publishes an image event for
// each, and returns them. Paths outside the workspace, non-images and
// unreadable files are refused and logged; an image too large to decode is
// refused with a note for the person, returned in notes. The files the run
// reported (FILE_CAPTURED, fileMarked among reported) are stored as they
// are (collectFile) and returned after the images; each one that cannot be
// sent has a note.
func (r *Runner) collectScreenshots(ctx context.Context, log zerolog.Logger, job contract.Job, dir string, reported []string, room int) (images []contract.Image, notes []string) {
	paths := append(slices.Clone(reported), dropped(dir)...)
	seen := map[string]bool{}
	var files []contract.Image
	tried := 0
	for _, p := range paths {
		if seen[p] {
			continue
		}
		seen[p] = true
		if fp, ok := fileCaptured(p); ok {
			f, note := r.collectFile(ctx, log, dir, fp, tried)
			tried++
			if note != "" {
				notes = append(notes, note)
			} else {
				files = append(files, f)
			}
			continue
		}
		if strings.HasPrefix(filepath.Clean(p), DropDir+"/") {
			defer removeBeneath(dir, p)
		}
		if len(images) >= room {
			log.Warn().Str("path", p).Int("max", screenshotsPerRun).Msg("screenshot skipped: too many in one run")
			continue
		}
		data, err := readScreenshot(dir, p)
		if err != nil {
			log.Warn().Err(err).Str("path", p).Msg("screenshot refused")
			continue
		}
		s, err := shot.Compress(data, screenshotMaxBytes)
		if errors.Is(err, shot.ErrTooManyPixels) {
			notes = append(notes, fmt.Sprintf("The image %s was not sent: it is larger than %d megapixels.", p, shot.MaxPixels/1_000_000))
		}
		if err != nil {
			log.Warn().Err(err).Str("path", p).Msg("screenshot not compressed")
			continue
		}
		img, err := r.storeImage(ctx, s)
		if err != nil {
			log.Error().Err(err).Msg("screenshot not stored")
			continue
		}
		r.publishImage(ctx, log, job, img, strconv.Itoa(len(images)+1))
		log.Info().Str("path", p).Str("object", img.ID).Int("size", img.Size).Int("width", img.Width).Int("height", img.Height).Msg("screenshot stored")
		images = append(images, img)
	}
	return append(images, files...), notes
}
