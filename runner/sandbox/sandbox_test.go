package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A Claude Code installed under a home (nvm: ~/.nvm/versions/node/vX) is
// shown read-only in the sandbox, which hides homes: its bin directory in
// PATH, and the package its link leads to.
func TestProgramDirsUnderHiddenHome(t *testing.T) {
	home := t.TempDir()
	nvm := filepath.Join(home, ".nvm", "versions", "node", "v20")
	pkg := filepath.Join(nvm, "lib", "node_modules", "@anthropic-ai", "claude-code")
	for _, d := range []string{filepath.Join(nvm, "bin"), pkg} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(pkg, "cli.js"), []byte("#!/usr/bin/env node\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	claude := filepath.Join(nvm, "bin", "claude")
	if err := os.Symlink("../lib/node_modules/@anthropic-ai/claude-code/cli.js", claude); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", filepath.Join(nvm, "bin")+":/usr/bin:/bin")
	got := programDirs([]string{home}, claude, nil)
	want := []string{filepath.Join(nvm, "bin"), filepath.Join(nvm, "lib", "node_modules")}
	if !slices.Equal(got, want) {
		t.Errorf("programDirs = %q; want %q (and nothing outside the hidden home)", got, want)
	}
}
