package handover

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/runner/sandbox"
)

// Files for the person: an agent names a file of any kind in its
// workspace with a line FILE_CAPTURED:<path> (see agent.Command), and the
// runner stores it in the media object store (bus.PutFile) and adds
// it to the done event's images; egress sends it as a document.
const (
	// MaxFileBytes is the largest file an agent may hand over.
	MaxFileBytes = 16 << 20
	// filesPerRun caps the files one run may send.
	filesPerRun = 10
)

// readFile reads the file at p (relative to the workspace dir, or
// absolute), confined exactly as a screenshot is (workspacePath,
// sandbox.ReadBeneath): a regular file inside dir of at most max bytes. Its errors
// are fs.ErrNotExist, errTooLarge, or errOutside for anything else that is
// not a file inside dir (a link out, a directory, a FIFO).
func readFile(dir, p string, max int) ([]byte, error) {
	rel, err := workspacePath(dir, p)
	if err != nil {
		return nil, err
	}
	data, err := sandbox.ReadBeneath(dir, rel, int64(max))
	switch {
	case err == nil:
		return data, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, err
	case sizeBeneath(dir, rel) > int64(max):
		return nil, fmt.Errorf("%s: %w: more than %d bytes", p, errTooLarge, max)
	}
	return nil, fmt.Errorf("%s: %w: %w", p, errOutside, err)
}

// sizeBeneath is the size of the regular file name beneath dir, or -1.
func sizeBeneath(dir, name string) int64 {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return -1
	}
	defer root.Close()
	fi, err := root.Stat(name)
	if err != nil || !fi.Mode().IsRegular() {
		return -1
	}
	return fi.Size()
}

// fileType is the content type a file is stored and served with: its
// extension's, else what its bytes look like. An image extension counts
// only for bytes of that image type, so that what is sent as an image is
// one (bus.PutFile hands images to PutImage, which checks them).
func fileType(name string, data []byte) string {
	sniffed := http.DetectContentType(data)
	ct := mime.TypeByExtension(filepath.Ext(name))
	if ct == "" || contract.IsImage(ct) || strings.HasPrefix(ct, "image/") && contract.IsImage(sniffed) {
		return sniffed
	}
	return ct
}

// collectFile stores the FILE_CAPTURED file p, the n-th of the run, in
// the media store of u's channel and returns it; a file that cannot be sent returns a note for the person
// instead.
func (s *Store) collectFile(ctx context.Context, u contract.User, dir, p string, n int) (contract.Image, string) {
	log := *zerolog.Ctx(ctx)
	if n >= filesPerRun {
		log.Warn().Str("path", p).Int("max", filesPerRun).Msg("file skipped: too many in one run")
		return contract.Image{}, fmt.Sprintf("The file %s was not sent: at most %d files go with one reply.", p, filesPerRun)
	}
	data, err := readFile(dir, p, MaxFileBytes)
	if err != nil {
		log.Warn().Err(err).Str("path", p).Msg("file refused")
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return contract.Image{}, fmt.Sprintf("The file %s was not sent: there is no such file in your workspace.", p)
		case errors.Is(err, errTooLarge):
			return contract.Image{}, fmt.Sprintf("The file %s was not sent: it is larger than %d MB.", p, MaxFileBytes>>20)
		}
		return contract.Image{}, fmt.Sprintf("The file %s was not sent: it is not a file inside your workspace.", p)
	}
	store, err := s.js.ObjectStore(ctx, contract.MediaBucketOf(u.Channel))
	var f contract.Image
	if err == nil {
		name := filepath.Base(p)
		f, err = bus.PutFile(ctx, store, fileType(name, data), name, data)
	}
	if err != nil {
		log.Error().Err(err).Str("path", p).Msg("file not stored")
		return contract.Image{}, fmt.Sprintf("The file %s could not be sent.", p)
	}
	log.Info().Str("path", p).Str("object", f.ID).Str("content_type", f.ContentType).Int("size", f.Size).Msg("file stored")
	return f, ""
}
