// Package testkit holds the helpers that the runner's tests in more than
// one package share (the runner's root and handover): files an attack
// aims at and a small image to hand over. Only tests import it.
package testkit

import (
	"bytes"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

// VictimDir is a directory only root may enter, holding a file: what a
// workspace's links point at in the attacks of the tests. It skips the
// test unless it runs as root.
func VictimDir(t *testing.T) (dir, file string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the attacks need textslash running as root")
	}
	dir = t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(dir, "precious")
	if err := os.WriteFile(file, []byte("root's own\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, file
}

// PNG is a 4×3 grey PNG image.
func PNG(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 4, 3))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
