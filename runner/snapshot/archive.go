package snapshot

import (
	"archive/tar"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"
)

// entry is one thing to put in the archive.
type entry struct {
	name    string   // in the archive
	root    *os.Root // read from
	path    string   // beneath root
	mode    fs.FileMode
	size    int64
	link    string
	mtime   time.Time
	current bool // a transcript of the session in the session file
}

// cost is an upper bound of the entry's bytes in the archive.
func (e *entry) cost() int64 {
	n := 512 + pad512(e.size)
	if long := e.name + e.link; len(e.name) > 100 || len(e.link) > 100 || strings.ContainsFunc(long, func(r rune) bool { return r >= 0x80 }) {
		n += 512 + pad512(int64(len(long)+64)) // a PAX header
	}
	return n
}

func pad512(n int64) int64 { return (n + 511) / 512 * 512 }

// plan decides what goes in: when everything would pass
// meta.Max, the history when the restore can fetch it from meta.URL, then
// the largest files, then the transcripts (the current session's last),
// then the history in any case, are left out (and listed in meta). It
// returns the entries to write in order and the bytes to spare.
func plan(meta *manifest, bundle *entry, files, transcripts []*entry, session []byte) ([]*entry, int64) {
	out := map[*entry]bool{}
	var total int64 = 1024 // the archive's end
	for _, e := range slices.Concat(files, transcripts) {
		total += e.cost()
	}
	if bundle != nil {
		total += bundle.cost()
	}
	if session != nil {
		total += 1024
	}
	metaBytes := func() int64 {
		b, _ := json.Marshal(meta)
		return 512 + pad512(int64(len(b)))
	}
	// The exact size of snapshot.json after each choice would cost a
	// marshalling per file left out; an upper bound is kept instead.
	mb := metaBytes()
	leave := func(e *entry, what string) {
		out[e] = true
		total -= e.cost()
		p := ""
		if what != leftHistory {
			p = strings.TrimPrefix(strings.TrimPrefix(e.name, entryFiles), entryClaude)
		}
		meta.LeftOut = append(meta.LeftOut, LeftOut{What: what, Path: p, Size: e.size, Why: whyCap})
		q, _ := json.Marshal(p)
		mb += int64(len(q)) + 64
	}
	var order []func() // each leaves one thing out
	queue := func(es []*entry, what string) {
		for _, e := range es {
			order = append(order, func() { leave(e, what) })
		}
	}
	if bundle != nil && meta.URL != "" {
		queue([]*entry{bundle}, leftHistory)
	}
	queue(bySize(files), leftFile)
	queue(bySize(transcripts), leftTranscript)
	if bundle != nil && meta.URL == "" {
		queue([]*entry{bundle}, leftHistory)
	}
	for len(order) > 0 {
		if total+mb <= meta.Max {
			if mb = metaBytes(); total+mb <= meta.Max { // the bound was loose
				break
			}
		}
		order[0]()
		order = order[1:]
	}
	return kept(meta, bundle, files, transcripts, out), max(0, meta.Max-total-metaBytes())
}

// bySize is the files among es with bytes, the largest first, a
// transcript of the current session after the others: the order in which
// plan leaves them out.
func bySize(es []*entry) []*entry {
	var rs []*entry
	for _, e := range es {
		if e.mode.IsRegular() && e.size > 0 {
			rs = append(rs, e)
		}
	}
	slices.SortStableFunc(rs, func(a, b *entry) int {
		if a.current != b.current { // the current session last
			if a.current {
				return 1
			}
			return -1
		}
		return cmp.Compare(b.size, a.size)
	})
	return rs
}

// kept is the entries to write, in order, all but those left out,
// and counts them in meta.
func kept(meta *manifest, bundle *entry, files, transcripts []*entry, out map[*entry]bool) []*entry {
	var entries []*entry
	if bundle != nil && !out[bundle] {
		entries = append(entries, bundle)
		meta.Bundle = bundle.size
	}
	for _, e := range files {
		if !out[e] {
			entries = append(entries, e)
			if e.mode.IsRegular() {
				meta.Files++
				meta.FileBytes += e.size
			}
		}
	}
	for _, e := range transcripts {
		if !out[e] {
			entries = append(entries, e)
			if e.mode.IsRegular() {
				meta.Transcripts++
			}
		}
	}
	return entries
}

// writeArchive writes the archive to w. A file grown past the bytes to
// spare since it was planned, or no longer a file, is left out (listed in
// late.json); raw counts the archive's bytes before compression.
func writeArchive(w io.Writer, meta *manifest, entries []*entry, session []byte, slack int64) (late []LeftOut, raw int64, err error) {
	gz, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
	cw := &countWriter{w: gz}
	tw := tar.NewWriter(cw)
	mj, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return nil, 0, err
	}
	if err := tarBytes(tw, entryManifest, mj); err != nil {
		return nil, 0, err
	}
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: int64(e.mode.Perm()), ModTime: e.mtime}
		switch {
		case e.mode.IsDir():
			hdr.Typeflag, hdr.Name = tar.TypeDir, e.name+"/"
		case e.mode&fs.ModeSymlink != 0:
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, e.link
		default:
			f, err := e.root.OpenFile(e.path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
			if errors.Is(err, fs.ErrNotExist) {
				continue // gone: nothing to move
			}
			var fi fs.FileInfo
			if err == nil {
				fi, err = f.Stat()
			}
			if err != nil || !fi.Mode().IsRegular() || fi.Size() > e.size+slack {
				if f != nil {
					f.Close()
				}
				if !strings.HasPrefix(e.name, entryBundle) {
					late = append(late, LeftOut{What: leftFile, Path: strings.TrimPrefix(e.name, entryFiles), Why: whyChanged})
					if strings.HasPrefix(e.name, entryClaude) {
						late[len(late)-1].What, late[len(late)-1].Path = leftTranscript, strings.TrimPrefix(e.name, entryClaude)
					}
					continue
				}
				return nil, 0, fmt.Errorf("bundle: %v", err)
			}
			slack -= max(0, fi.Size()-e.size)
			hdr.Typeflag, hdr.Size, hdr.Mode = tar.TypeReg, fi.Size(), int64(fi.Mode().Perm())
			err = tw.WriteHeader(hdr)
			if err == nil {
				// A file shrinking while it is read cannot be written
				// whole: the snapshot fails, the one before stays.
				_, err = io.CopyN(tw, f, hdr.Size)
			}
			f.Close()
			if err != nil {
				return nil, 0, fmt.Errorf("%s: %w", e.name, err)
			}
			continue
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, 0, err
		}
	}
	if session != nil {
		if err := tarBytes(tw, entrySession, session); err != nil {
			return nil, 0, err
		}
	}
	if len(late) > 0 {
		lj, _ := json.Marshal(late)
		if err := tarBytes(tw, entryLate, lj); err != nil {
			return nil, 0, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, 0, err
	}
	if err := gz.Close(); err != nil {
		return nil, 0, err
	}
	return late, cw.n, nil
}

func tarBytes(tw *tar.Writer, name string, data []byte) error {
	if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o600, Size: int64(len(data))}); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
