package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
)

// People's git credentials, for private repositories cloned into
// projects. The operator keeps them in a directory (Config.Credentials),
// one subdirectory per person named by contract.PersonKey:
//
//	phone.15551234567/git-credentials   https tokens, git's credential-store format
//	phone.15551234567/ssh/id_ed25519    private keys: any name but known_hosts, config, *.pub
//	phone.15551234567/ssh/known_hosts   the hosts' keys (optional)
//
// No run sees that directory: the sandbox hides it. A run of a person with
// a subdirectory gets a copy of its files, owned by the agent user (the
// originals may be root's, 0600), in a directory of its own under
// <Workspaces>/.credentials — hidden from every run as well — bound
// read-only into that run's sandbox alone at CredentialsPath, and removed
// when the run ends. The run's environment points git there; the files'
// contents are never in an environment, a command line or a log.
//
// Without the sandbox every run is the same user seeing the same files:
// nothing would keep one person's credentials from another person's
// agent, so none are handed out.

// CredentialsPath is where a run sees its person's credentials. It is in
// the run's own /tmp (a fresh tmpfs in every sandbox) because bwrap can
// make a mount point only under a directory it may write: the system is
// bound read-only, so /run/textslash cannot be made, and a tmpfs over /run
// would hide what the system keeps there (resolv.conf's target, on hosts
// with systemd-resolved).
const CredentialsPath = "/tmp/textslash/credentials"

// The files of a person's credentials.
const (
	gitCredentialsFile = "git-credentials"
	sshDir             = "ssh"
	knownHostsFile     = "known_hosts"
	// credentialsCopies, under the workspaces directory, holds the runs'
	// copies.
	credentialsCopies = ".credentials"
	// maxCredentialFile is the largest file copied: credentials are small,
	// and a run's start should not copy a mistake of gigabytes.
	maxCredentialFile = 1 << 20
)

// personKeyRE is what a subdirectory's name looks like when it is a
// contract.PersonKey ("phone.15551234567", "telegram.123456789").
var personKeyRE = regexp.MustCompile(`^[a-z]+\.[A-Za-z0-9_-]{1,64}$`)

// Credentials hands people's credentials to their runs.
type Credentials struct {
	dir    string // the operator's: one subdirectory per person
	copies string // <Workspaces>/.credentials: the runs' copies
	user   *User  // whom the copies belong to; nil: textslash's user
}

// OpenCredentials readies the credentials in dir (Config.Credentials)
// at start: dir and the runs' copies under workspaces are added to what
// box hides, copies a crash left are removed, and each person's kinds of
// credentials are logged (never their contents). Without a sandbox (box
// nil) it logs an error and hands none out; dir "" hands none out. A nil
// *Credentials hands none out.
func OpenCredentials(dir, workspaces string, box *Sandbox, u *User, log zerolog.Logger) (*Credentials, error) {
	if dir == "" {
		return nil, nil
	}
	if box == nil {
		log.Error().Str("credentials", dir).Msg("TEXTSLASH_CREDENTIALS is set but runs are not sandboxed (TEXTSLASH_SANDBOX=off): every run is the same user seeing the same files, so no person's credentials could be kept from the others; none are handed out")
		return nil, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", abs)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		log.Warn().Str("credentials", abs).Str("mode", fi.Mode().Perm().String()).Msg("the credentials directory is open to other users of this machine: chmod 700 it")
	}
	c := &Credentials{dir: abs, copies: filepath.Join(workspaces, credentialsCopies), user: u}
	// A shared directory is bound into every run after the hidden ones
	// are hidden: it would show them again.
	for _, sh := range box.Share {
		if a, err := filepath.Abs(sh); err == nil && (within(abs, a) || within(a, abs) || within(c.copies, a)) {
			return nil, contract.BadSetting(service, configPath+".Share", sh,
				fmt.Sprintf("overlaps the credentials %s or their runs' copies %s: every run would see them", abs, c.copies))
		}
	}
	// Copies a crash left behind hold secrets: gone before any run.
	if err := os.RemoveAll(c.copies); err != nil {
		return nil, fmt.Errorf("runs' copies: %w", err)
	}
	// The agent user passes through (bwrap, as that user, binds a run's
	// copy from there), never lists.
	mode := os.FileMode(0o700)
	if u != nil {
		mode = 0o711
	}
	if err := os.Mkdir(c.copies, mode); err != nil {
		return nil, fmt.Errorf("runs' copies: %w", err)
	}
	if err := os.Chmod(c.copies, mode); err != nil { // whatever the umask
		return nil, fmt.Errorf("runs' copies: %w", err)
	}
	// A directory the agent user cannot reach is out of every run's sight
	// already (runs are that user, without privileges), and bwrap, as that
	// user, could not mount over it.
	if canReach(filepath.Dir(abs), u) {
		box.Hide = append(box.Hide, abs)
	}
	box.Hide = append(box.Hide, c.copies)

	entries, err := os.ReadDir(abs)
	if err != nil {
		return nil, err
	}
	people := 0
	for _, e := range entries {
		src := filepath.Join(abs, e.Name())
		if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
			continue
		}
		files, err := readCredentialFiles(src)
		if err != nil {
			log.Error().Err(err).Str("person", e.Name()).Msg("credentials unreadable: this person's runs will fail until fixed")
			continue
		}
		if !personKeyRE.MatchString(e.Name()) {
			log.Warn().Str("dir", e.Name()).Msg("credentials subdirectory is not named like a person (phone.15551234567, telegram.123456789, web.<id>): nobody's runs get it")
		}
		people++
		log.Info().Str("person", e.Name()).Strs("kinds", files.kinds()).Msg("credentials given")
	}
	log.Info().Str("credentials", abs).Int("people", people).Str("path", CredentialsPath).Msg("people's git credentials go to their own runs only")
	return c, nil
}

// credentialFiles is what a person's subdirectory holds.
type credentialFiles struct {
	https      bool     // git-credentials
	keys       []string // ssh's private keys, by name in ssh/
	knownHosts bool     // ssh/known_hosts
	public     []string // *.pub in ssh/ (certificates among them)
}

func (f credentialFiles) kinds() []string {
	k := []string{}
	if f.https {
		k = append(k, "https")
	}
	if len(f.keys) > 0 {
		k = append(k, "ssh")
	}
	return k
}

// readCredentialFiles lists the credentials in a person's subdirectory
// src, without reading them.
func readCredentialFiles(src string) (credentialFiles, error) {
	var f credentialFiles
	regular := func(p string) (bool, error) {
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if !fi.Mode().IsRegular() {
			return false, nil
		}
		if fi.Size() > maxCredentialFile {
			return false, fmt.Errorf("%s: %d bytes, more than credentials take", p, fi.Size())
		}
		return true, nil
	}
	var err error
	if f.https, err = regular(filepath.Join(src, gitCredentialsFile)); err != nil {
		return f, err
	}
	entries, err := os.ReadDir(filepath.Join(src, sshDir))
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, err
	}
	for _, e := range entries {
		name := e.Name()
		if ok, err := regular(filepath.Join(src, sshDir, name)); err != nil {
			return f, err
		} else if !ok {
			continue
		}
		switch {
		case name == knownHostsFile:
			f.knownHosts = true
		case strings.HasSuffix(name, ".pub"):
			f.public = append(f.public, name)
		case name == "config", name == "authorized_keys", strings.HasPrefix(name, knownHostsFile):
			// Not what a client's credentials are; not copied.
		default:
			f.keys = append(f.keys, name)
		}
	}
	return f, nil
}

// RunCredentials are the credentials of one run: a copy of its person's,
// removed when the run ends. A nil *RunCredentials is a run without any.
type RunCredentials struct {
	dir   string // the copy, on the host
	files credentialFiles
	home  string // the run's home: ssh's known hosts when the operator gave none
	log   zerolog.Logger
}

// Issue copies u's credentials for one run whose home is home; nil when
// u has none (or none are handed out). The copy must be removed when the
// run ends (Remove).
func (c *Credentials) Issue(u contract.User, home string, log zerolog.Logger) (*RunCredentials, error) {
	if c == nil {
		return nil, nil
	}
	key := contract.PersonKey(u)
	src := filepath.Join(c.dir, key)
	if fi, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("credentials of %s: %w", key, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("credentials of %s: %s is not a directory", key, src)
	}
	files, err := readCredentialFiles(src)
	if err != nil {
		return nil, fmt.Errorf("credentials of %s: %w", key, err)
	}
	if !files.https && len(files.keys) == 0 {
		return nil, nil
	}
	if len(files.keys) == 0 {
		files.knownHosts, files.public = false, nil // of no use without a key
	}
	// Made by textslash in its own directory the agent user cannot write:
	// nothing there can be a link planted to turn the copy elsewhere. The
	// same directory for each of the person's runs (emptied at each run's
	// end), so that the person's home, which binds it, is kept; named by
	// an opaque digest, not the person.
	sum := sha256.Sum256([]byte(key))
	dir := filepath.Join(c.copies, "p"+hex.EncodeToString(sum[:12]))
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("credentials of %s: %w", key, err)
	}
	if err := empty(dir); err != nil {
		return nil, fmt.Errorf("credentials of %s: %w", key, err)
	}
	rc := &RunCredentials{dir: dir, files: files, home: home, log: log}
	if err := c.copy(src, dir, files); err != nil {
		rc.Remove()
		return nil, fmt.Errorf("credentials of %s: %w", key, err)
	}
	if len(files.keys) > 0 && !files.knownHosts {
		if err := sshHome(home, c.user); err != nil {
			rc.Remove()
			return nil, fmt.Errorf("credentials of %s: %w", key, err)
		}
	}
	log.Info().Str("person", key).Strs("kinds", files.kinds()).Msg("credentials handed to the run")
	return rc, nil
}

// copy copies files of src into dir, every file 0600 and directory 0700,
// the agent user's; dir is owned last, once full.
func (c *Credentials) copy(src, dir string, files credentialFiles) error {
	if files.https {
		if err := copySecret(filepath.Join(src, gitCredentialsFile), filepath.Join(dir, gitCredentialsFile), c.user); err != nil {
			return err
		}
	}
	if len(files.keys) > 0 {
		names := slices.Concat(files.keys, files.public)
		if files.knownHosts {
			names = append(names, knownHostsFile)
		}
		to := filepath.Join(dir, sshDir)
		if err := os.Mkdir(to, 0o700); err != nil {
			return err
		}
		for _, n := range names {
			if err := copySecret(filepath.Join(src, sshDir, n), filepath.Join(to, n), c.user); err != nil {
				return err
			}
		}
		if err := own(to, c.user); err != nil {
			return err
		}
	}
	return own(dir, c.user)
}

// copySecret copies file src (at most maxCredentialFile bytes) to a new
// file dst, 0600 and u's.
func copySecret(src, dst string, u *User) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, io.LimitReader(in, maxCredentialFile)); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", filepath.Base(src), err)
	}
	if u != nil {
		if err := out.Chown(int(u.UID), int(u.GID)); err != nil {
			out.Close()
			return err
		}
	}
	return out.Close()
}

// own gives directory d to u (nobody's business when u is nil).
func own(d string, u *User) error {
	if u == nil {
		return nil
	}
	return os.Lchown(d, int(u.UID), int(u.GID))
}

// sshHome makes the .ssh directory of a run's home, where ssh remembers
// the hosts it met when the operator gave no known_hosts. An existing
// one, whatever it is (the person's agent may have made it a link), is
// left alone: nothing of it is followed.
func sshHome(home string, u *User) error {
	d := filepath.Join(home, ".ssh")
	if err := os.Mkdir(d, 0o700); errors.Is(err, fs.ErrExist) {
		return nil
	} else if err != nil {
		return err
	}
	return own(d, u)
}

// empty removes what directory dir holds, following no link.
func empty(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// Remove removes the run's copy (the directory stays, empty, for the
// person's next run: their home binds it).
func (rc *RunCredentials) Remove() {
	if rc == nil {
		return
	}
	if err := empty(rc.dir); err != nil {
		rc.log.Error().Err(err).Str("dir", rc.dir).Msg("a run's copy of credentials NOT removed")
	}
}

// Sandbox is box for this run: with the copy bound read-only at
// CredentialsPath.
func (rc *RunCredentials) Sandbox(box *Sandbox) *Sandbox {
	if rc == nil || box == nil {
		return box
	}
	return box.withBind(rc.dir, CredentialsPath)
}

// Env is env (a run's extra variables) with git pointed at the run's
// credentials: a credential helper reading git-credentials, and ssh with
// the keys.
//
// The helper answers only get: credential-store would also be asked to
// store a password that worked and erase one that did not, and it
// rewrites its file for that — the read-only copy makes it wait a second
// and print "fatal: unable to get credential storage lock" on every push.
func (rc *RunCredentials) Env(env []string) []string {
	env = slices.Clip(env)
	if rc == nil {
		return env
	}
	if rc.files.https {
		file := shellQuote(path.Join(CredentialsPath, gitCredentialsFile))
		helper := `!f() { test "$1" != get || exec git credential-store --file=` + file + ` get; }; f`
		env = gitConfigEnv(env, "credential.helper", helper)
	}
	if len(rc.files.keys) > 0 {
		env = append(env, "GIT_SSH_COMMAND="+rc.sshCommand())
	}
	return env
}

// sshCommand is ssh with the run's keys, never asking anything. The hosts'
// keys the operator gave are the only ones trusted (StrictHostKeyChecking
// yes); without them a host is trusted when first met and remembered in
// the person's home (accept-new), as ssh does for anyone who answers
// "yes" once: pinned from then on, for that person.
func (rc *RunCredentials) sshCommand() string {
	var b strings.Builder
	b.WriteString("ssh")
	for _, k := range rc.files.keys {
		b.WriteString(" -i " + shellQuote(path.Join(CredentialsPath, sshDir, k)))
	}
	b.WriteString(" -o IdentitiesOnly=yes -o BatchMode=yes")
	if rc.files.knownHosts {
		b.WriteString(" -o StrictHostKeyChecking=yes -o UserKnownHostsFile=" + shellQuote(path.Join(CredentialsPath, sshDir, knownHostsFile)))
	} else {
		b.WriteString(" -o StrictHostKeyChecking=accept-new -o UserKnownHostsFile=" + shellQuote(filepath.Join(rc.home, ".ssh", knownHostsFile)))
	}
	return b.String()
}

// gitConfigEnv adds git configuration entries (name, value, name, value…)
// to env as GIT_CONFIG_KEY_n/GIT_CONFIG_VALUE_n, numbered after those env
// has already (its last GIT_CONFIG_COUNT), and counts them all.
func gitConfigEnv(env []string, pairs ...string) []string {
	n := 0
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GIT_CONFIG_COUNT="); ok {
			n, _ = strconv.Atoi(v)
		}
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", n, pairs[i]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", n, pairs[i+1]))
		n++
	}
	return append(env, "GIT_CONFIG_COUNT="+strconv.Itoa(n))
}

// within reports whether path is dir or under it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// shellQuote is s as one word of a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
