package handover

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// A file for the person is read exactly as a screenshot is: only inside
// the workspace, links followed only while they stay inside, regular files
// only, and at most the cap.
func TestReadFile(t *testing.T) {
	root := t.TempDir()
	ws, other := filepath.Join(root, "web.alice"), filepath.Join(root, "web.bob")
	for _, d := range []string{ws, other, filepath.Join(ws, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path string, data []byte) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(ws, "out.csv"), []byte("a,b\n1,2\n"))
	write(filepath.Join(ws, "sub", "big.bin"), make([]byte, 101))
	write(filepath.Join(ws, "sub", "edge.bin"), make([]byte, 100))
	write(filepath.Join(other, "secret.txt"), []byte("bob's"))
	write(filepath.Join(root, "outside.txt"), []byte("root's"))
	for target, name := range map[string]string{
		filepath.Join(other, "secret.txt"): "bobs.txt",
		"../outside.txt":                   "up.txt",
		"out.csv":                          "inside.csv",
		"/etc/passwd":                      "passwd",
	} {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		path string
		want error // nil: read
	}{
		{"out.csv", nil},
		{filepath.Join(ws, "out.csv"), nil},
		{"inside.csv", nil},
		{"sub/edge.bin", nil},
		{"sub/big.bin", errTooLarge},
		{"missing.csv", fs.ErrNotExist},
		{"../outside.txt", errOutside},
		{"../web.bob/secret.txt", errOutside},
		{filepath.Join(other, "secret.txt"), errOutside},
		{"/etc/passwd", errOutside},
		{"/proc/self/environ", errOutside},
		{"bobs.txt", errOutside},
		{"up.txt", errOutside},
		{"passwd", errOutside},
		{"sub", errOutside},
		{".", errOutside},
	}
	for _, tt := range tests {
		data, err := readFile(ws, tt.path, 100)
		switch {
		case tt.want == nil && err != nil:
			t.Errorf("readFile(%q): %v; want it read", tt.path, err)
		case tt.want == nil && len(data) == 0:
			t.Errorf("readFile(%q): no data", tt.path)
		case tt.want != nil && !errors.Is(err, tt.want):
			t.Errorf("readFile(%q) = %d bytes, %v; want %v", tt.path, len(data), err, tt.want)
		}
	}
}
