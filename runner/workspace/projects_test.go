package workspace

import (
	"os"
	"path/filepath"
	"testing"
)

// headBranch reads .git/HEAD, and only a branch.
func TestHeadBranch(t *testing.T) {
	tests := []struct{ head, want string }{
		{"ref: refs/heads/main\n", "main"},
		{"ref: refs/heads/textslash/abc\n", "textslash/abc"},
		{"4b825dc642cb6eb9a060e54bf8d69288fbee4904\n", ""},
		{"ref: refs/remotes/origin/x\n", ""},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ".git", "HEAD"), []byte(tt.head), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := headBranch(dir); got != tt.want {
			t.Errorf("HEAD %q: got %q; want %q", tt.head, got, tt.want)
		}
	}
	if got := headBranch(t.TempDir()); got != "" {
		t.Errorf("no repository: got %q; want \"\"", got)
	}
}
