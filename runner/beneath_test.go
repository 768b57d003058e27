package runner

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/textslash/textslash/runner/handover/pageshot"
	"github.com/textslash/textslash/runner/internal/testkit"
	"github.com/textslash/textslash/runner/sandbox"
	"github.com/textslash/textslash/runner/session"
)

func fileOwner(t *testing.T, path string) uint32 {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Uid
}

// testAgentUser is the unprivileged user the tests run agents as:
// $TEXTSLASH_TEST_AGENT_USER, else textslash-agent (scripts/setup makes it).
func testAgentUser(t *testing.T) *sandbox.User {
	t.Helper()
	name := os.Getenv("TEXTSLASH_TEST_AGENT_USER")
	if name == "" {
		name = "textslash-agent"
	}
	u, err := sandbox.LookupUser(name)
	if err != nil {
		t.Skipf("no agent user: %v", err)
	}
	return u
}

// `ln -s /root-only inbox`: the next attachment neither gives the target
// to the agent nor writes into it.
func TestInboxLinkOutside(t *testing.T) {
	victim, file := testkit.VictimDir(t)
	u := testAgentUser(t)
	ws := t.TempDir()
	if err := os.Symlink(victim, filepath.Join(ws, inboxDir)); err != nil {
		t.Fatal(err)
	}
	if err := sandbox.MkdirBeneath(ws, inboxDir, u); err == nil {
		t.Error("inbox linked outside the workspace was taken as the inbox")
	}
	if err := sandbox.WriteBeneath(ws, filepath.Join(inboxDir, "m-1.jpeg"), []byte("x"), 0o644, u); err == nil {
		t.Error("an attachment was written through the link")
	}
	if fileOwner(t, victim) != 0 || fileOwner(t, file) != 0 {
		t.Errorf("the link's target was given away: dir %d, file %d", fileOwner(t, victim), fileOwner(t, file))
	}
	if _, err := os.Stat(filepath.Join(victim, "m-1.jpeg")); err == nil {
		t.Error("an attachment landed in the link's target")
	}
	// An inbox of the workspace's own works, and is the agent's.
	ws2 := t.TempDir()
	if err := sandbox.MkdirBeneath(ws2, inboxDir, u); err != nil {
		t.Fatal(err)
	}
	if err := sandbox.WriteBeneath(ws2, filepath.Join(inboxDir, "m-1.jpeg"), []byte("x"), 0o644, u); err != nil {
		t.Fatal(err)
	}
	if fileOwner(t, filepath.Join(ws2, inboxDir, "m-1.jpeg")) != u.UID {
		t.Error("the attachment is not the agent's")
	}
}

// `ln -s /root-only/file .textslash-session`: the runner neither reads it
// (as the session to resume) nor writes it.
func TestSessionFileLinkOutside(t *testing.T) {
	_, file := testkit.VictimDir(t)
	if err := os.WriteFile(file, []byte("stolen-session-id\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	if err := os.Symlink(file, filepath.Join(home, session.File)); err != nil {
		t.Fatal(err)
	}
	if got := session.Read(home, session.File); got != "" {
		t.Errorf("read %q through the link", got)
	}
	if err := session.Write(home, session.File, "new-session"); err == nil {
		t.Error("wrote the session through the link")
	}
	if data, _ := os.ReadFile(file); string(data) != "stolen-session-id\n" {
		t.Errorf("the link's target now holds %q", data)
	}
}

// A PNG claiming 10000×10000 pixels (100 MP: 800 MB decoded at 16 bits)
// is refused from its header, never decoded.
func TestCompressRefusesHugeImage(t *testing.T) {
	if _, err := pageshot.Compress(pngHeader(10000, 10000), 0); !errors.Is(err, pageshot.ErrTooManyPixels) {
		t.Errorf("100 MP PNG: error %v; want ErrTooManyPixels", err)
	}
}

// pngHeader is a PNG's signature and IHDR chunk (16-bit RGBA), all
// DecodeConfig reads.
func pngHeader(w, h uint32) []byte {
	var ihdr bytes.Buffer
	ihdr.WriteString("IHDR")
	_ = binary.Write(&ihdr, binary.BigEndian, w)
	_ = binary.Write(&ihdr, binary.BigEndian, h)
	ihdr.Write([]byte{16, 6, 0, 0, 0})
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	_ = binary.Write(&b, binary.BigEndian, uint32(ihdr.Len()-4))
	b.Write(ihdr.Bytes())
	_ = binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(ihdr.Bytes()))
	return b.Bytes()
}
