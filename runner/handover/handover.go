package handover

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/runner/agent"
	"github.com/textslash/textslash/runner/handover/pageshot"
	"github.com/textslash/textslash/runner/sandbox"
)

// DropDir is where, inside a workspace, an agent may drop images for the
// reply without naming them in its output; the runner takes them after
// each run.
const DropDir = "tmp/ai_screenshots"

const (
	// screenshotMaxFile is the largest image file the runner reads.
	screenshotMaxFile = 32 << 20
	// screenshotMaxBytes is the ceiling of a stored image: it fits every
	// channel (MMS takes 1 MB, WhatsApp 5 MB).
	screenshotMaxBytes = pageshot.DefaultMaxBytes
	// screenshotsPerRun caps the images one run may send.
	screenshotsPerRun = 10
)

// Store keeps what runs hand over in the media object store and tells
// of each image with an image event.
type Store struct {
	js jetstream.JetStream
}

// NewStore is the Store of js's media object store and events.
func NewStore(js jetstream.JetStream) *Store { return &Store{js: js} }

// workspacePath is p (relative to the workspace dir, or absolute) relative
// to dir, or errOutside when it names a place outside dir (or dir itself).
// Only a first check: links are resolved by sandbox.ReadBeneath.
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
// inside (sandbox.ReadBeneath), so textslash opens nothing else of the machine an
// agent names (a device acting on open, a FIFO).
func readScreenshot(dir, p string) ([]byte, error) {
	rel, err := workspacePath(dir, p)
	if err != nil {
		return nil, err
	}
	data, err := sandbox.ReadBeneath(dir, rel, screenshotMaxFile)
	if err != nil {
		return nil, err // a link out of dir: os.Root's "path escapes from parent"
	}
	if ct := http.DetectContentType(data); !contract.IsImage(ct) {
		return nil, fmt.Errorf("%s: %s, %w", p, ct, errNotImage)
	}
	return data, nil
}

// dropFile is a file an agent left in DropDir: its path relative to the
// workspace, and when it was last modified.
type dropFile struct {
	path string
	mod  time.Time
}

// dropped lists the files agents left in the workspace's DropDir, oldest
// first.
func dropped(dir string) []dropFile {
	entries, err := sandbox.ReadDirBeneath(dir, DropDir)
	if err != nil {
		return nil
	}
	var files []dropFile
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && !e.IsDir() {
			files = append(files, dropFile{filepath.Join(DropDir, e.Name()), fi.ModTime()})
		}
	}
	slices.SortStableFunc(files, func(a, b dropFile) int { return a.mod.Compare(b.mod) })
	return files
}

// handedOver is what a run handed over for the reply, in order: what it
// reported (its marker lines), then the files it left in DropDir for its
// task (droppedFor), each once.
func handedOver(log zerolog.Logger, dir string, reported []agent.Handover, task string, started time.Time) []agent.Handover {
	var out []agent.Handover
	seen := map[agent.Handover]bool{}
	add := func(h agent.Handover) {
		if k := handoverKey(dir, h); !seen[k] {
			seen[k] = true
			out = append(out, h)
		}
	}
	for _, h := range reported {
		add(h)
	}
	isReported := func(p string) bool { return seen[handoverKey(dir, agent.Handover{Path: p})] }
	for _, p := range droppedFor(log, dir, task, started, time.Now(), isReported) {
		add(agent.Handover{Path: p})
	}
	return out
}

// handoverKey tells handovers of the same file apart from others: the
// kind and the path relative to the workspace dir, cleaned.
func handoverKey(dir string, h agent.Handover) agent.Handover {
	k := agent.Handover{Path: filepath.Clean(h.Path), File: h.File}
	if rel, err := workspacePath(dir, h.Path); err == nil {
		k.Path = rel
	}
	return k
}

// Collect stores the images job's run (whose task id is task) handed over (handedOver: its
// marker lines, then its files in DropDir, which are removed) as
// compressed JPEGs, as many as the reply has room for besides the taken
// it holds already, each with its caption (or, when it has none, the
// agent's description of it: caption, which may be nil or return ""), publishes
// an image event for each, and returns them. Paths
// outside the workspace, non-images and unreadable files are refused and
// logged (and, dropped in DropDir, told to the person in notes: a link
// there leading out of the workspace, say); an image too large to decode
// is refused with a note too. The files the run reported (FILE_CAPTURED)
// are stored as they are (collectFile) and returned after the images;
// each one that cannot be sent has a note.
func (s *Store) Collect(ctx context.Context, job contract.Job, task, dir string, reported []agent.Handover, taken int,
	started time.Time, caption func(path string) string) (images []contract.Image, notes []string) {
	log := *zerolog.Ctx(ctx)
	var files []contract.Image
	tried, room := 0, screenshotsPerRun-taken
	for _, h := range handedOver(log, dir, reported, task, started) {
		if h.File {
			f, note := s.collectFile(ctx, job.User, dir, h.Path, tried)
			tried++
			if note != "" {
				notes = append(notes, note)
			} else {
				files = append(files, f)
			}
			continue
		}
		if inDropDir(dir, h.Path) {
			defer sandbox.RemoveBeneath(dir, handoverKey(dir, h).Path)
		}
		if len(images) >= room {
			log.Warn().Str("path", h.Path).Int("max", screenshotsPerRun).Msg("screenshot skipped: too many in one run")
			continue
		}
		img, note, err := s.storeScreenshot(ctx, job.User, dir, h.Path)
		if note != "" {
			notes = append(notes, note)
		}
		if err != nil {
			log.Warn().Err(err).Str("path", h.Path).Msg("screenshot refused")
			continue
		}
		img.Caption = h.Caption
		if img.Caption == "" && caption != nil {
			img.Caption = caption(handoverKey(dir, h).Path)
		}
		s.publishImage(ctx, job, img, strconv.Itoa(len(images)+1))
		log.Info().Str("path", h.Path).Str("object", img.ID).Int("size", img.Size).Int("width", img.Width).Int("height", img.Height).
			Bool("caption", img.Caption != "").Msg("screenshot stored")
		images = append(images, img)
	}
	return append(images, files...), notes
}

// inDropDir reports whether p (relative to the workspace dir, or
// absolute) is a file an agent dropped in DropDir, however the agent
// wrote its path: ./tmp/ai_screenshots/x.png or the absolute path name
// the same file as tmp/ai_screenshots/x.png, and all are deleted once
// taken.
func inDropDir(dir, p string) bool {
	rel, err := workspacePath(dir, p)
	return err == nil && strings.HasPrefix(rel, DropDir+"/")
}

// unreadNote tells the person why the image at p, which readScreenshot
// refused with err, was not sent.
func unreadNote(dir, p string, err error) string {
	why := "it is not a file inside your workspace"
	switch {
	case linkBeneath(dir, p):
		why = "it is a link that does not lead to an image inside your workspace; save the image itself there"
	case errors.Is(err, fs.ErrNotExist):
		why = "there is no such file in your workspace"
	case errors.Is(err, errNotImage):
		why = "it is not a PNG or JPEG image"
	}
	return fmt.Sprintf("The image %s was not sent: %s.", p, why)
}

// linkBeneath reports whether p (as workspacePath takes it) is a symbolic
// link inside dir.
func linkBeneath(dir, p string) bool {
	rel, err := workspacePath(dir, p)
	if err != nil {
		return false
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return false
	}
	defer root.Close()
	fi, err := root.Lstat(rel)
	return err == nil && fi.Mode()&fs.ModeSymlink != 0
}

// storeScreenshot reads the image at p in the workspace dir
// (readScreenshot), compresses it and stores it in u's media store. An
// image dropped in DropDir and refused, or too large to decode, also
// returns a note for the person.
func (s *Store) storeScreenshot(ctx context.Context, u contract.User, dir, p string) (img contract.Image, note string, err error) {
	data, err := readScreenshot(dir, p)
	if err != nil && inDropDir(dir, p) {
		return contract.Image{}, unreadNote(dir, p, err), err
	}
	if err != nil {
		return contract.Image{}, "", err
	}
	shot, err := pageshot.Compress(data, screenshotMaxBytes)
	if errors.Is(err, pageshot.ErrTooManyPixels) {
		note = fmt.Sprintf("The image %s was not sent: it is larger than %d megapixels.", p, pageshot.MaxPixels/1_000_000)
	}
	if err != nil {
		return contract.Image{}, note, fmt.Errorf("compress: %w", err)
	}
	if img, err = s.storeImage(ctx, u, shot); err != nil {
		return contract.Image{}, "", err
	}
	return img, "", nil
}

// storeImage puts a JPEG in the media store of u's channel
// (contract.MediaBucketOf), the one that channel reads.
func (s *Store) storeImage(ctx context.Context, u contract.User, shot pageshot.Shot) (contract.Image, error) {
	store, err := s.js.ObjectStore(ctx, contract.MediaBucketOf(u.Channel))
	if err != nil {
		return contract.Image{}, fmt.Errorf("media store: %w", err)
	}
	img, err := bus.PutImage(ctx, store, "image/jpeg", shot.JPEG)
	if err != nil {
		return contract.Image{}, fmt.Errorf("store image: %w", err)
	}
	img.Width, img.Height = shot.Width, shot.Height
	return img, nil
}

// publishImage publishes the image event of an image added to job's reply;
// name tells the images of one job apart (deduplication).
func (s *Store) publishImage(ctx context.Context, job contract.Job, img contract.Image, name string) {
	log := *zerolog.Ctx(ctx)
	ev := contract.NewImage(job.User, job.ID, img)
	if err := bus.PublishEvent(ctx, s.js, ev, contract.MsgID(job.User, job.ID, "image", name)); err != nil {
		log.Warn().Err(err).Str("object", img.ID).Msg("image event")
	}
}
