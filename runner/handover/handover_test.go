package handover

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/textslash/textslash/runner/internal/testkit"
)

// Only a PNG or JPEG file inside the user's own workspace, symlinks
// followed, is taken as a screenshot.
func TestReadScreenshot(t *testing.T) {
	root := t.TempDir()
	ws, other := filepath.Join(root, "web.alice"), filepath.Join(root, "web.bob")
	for _, d := range []string{ws, other, filepath.Join(ws, "shots"), filepath.Join(ws, DropDir)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	img := testkit.PNG(t)
	write := func(path string, data []byte) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(ws, "shots", "app.png"), img)
	write(filepath.Join(ws, "notes.txt"), []byte("not an image"))
	write(filepath.Join(ws, "fake.png"), []byte("<svg/>"))
	write(filepath.Join(other, "secret.png"), img)
	write(filepath.Join(root, "outside.png"), img)
	link := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	link(filepath.Join(other, "secret.png"), "bobs.png")
	link("../outside.png", "up.png")
	link("shots/app.png", "inside-link.png")
	link("/etc/passwd", "passwd.png")
	link(filepath.Join(ws, "shots"), "dirlink")
	link("shots", "reldirlink")
	if err := syscall.Mkfifo(filepath.Join(ws, DropDir, "pipe.png"), 0o644); err != nil {
		t.Fatal(err)
	}
	link(filepath.Join(ws, DropDir, "pipe.png"), "pipelink.png")

	tests := []struct {
		path string
		ok   bool
	}{
		{"shots/app.png", true},
		{filepath.Join(ws, "shots", "app.png"), true},
		{"inside-link.png", true},
		{"reldirlink/app.png", true},
		// An absolute link is refused even when it points inside: names
		// resolve beneath the workspace (as openat2's RESOLVE_BENEATH).
		{"dirlink/app.png", false},
		{"../outside.png", false},
		{"../web.bob/secret.png", false},
		{filepath.Join(other, "secret.png"), false},
		{filepath.Join(root, "outside.png"), false},
		{"bobs.png", false},
		{"up.png", false},
		{"passwd.png", false},
		{"notes.txt", false},
		{"fake.png", false},
		{"shots", false},
		{".", false},
		{"missing.png", false},
		{"/proc/self/environ", false},
		{filepath.Join(DropDir, "pipe.png"), false}, // a FIFO: refused, never waited on
		{"pipelink.png", false},
	}
	for _, tt := range tests {
		data, err := readScreenshot(ws, tt.path)
		if tt.ok != (err == nil) {
			t.Errorf("%s: error %v; want ok %t", tt.path, err, tt.ok)
		}
		if tt.ok && !bytes.Equal(data, img) {
			t.Errorf("%s: read %d bytes; want the image", tt.path, len(data))
		}
	}
}

func TestDroppedOldestFirst(t *testing.T) {
	ws := t.TempDir()
	drop := filepath.Join(ws, DropDir)
	if err := os.MkdirAll(filepath.Join(drop, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"b.png", "a.png", "c.jpeg"} {
		p := filepath.Join(drop, name)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		at := time.Unix(1_700_000_000+int64(i), 0)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, f := range dropped(ws) {
		got = append(got, f.path)
	}
	want := []string{DropDir + "/b.png", DropDir + "/a.png", DropDir + "/c.jpeg"}
	if !slices.Equal(got, want) {
		t.Errorf("dropped %q; want %q", got, want)
	}
}
