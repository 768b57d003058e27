package app

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"golang.org/x/crypto/bcrypt"
)

// The embedded NATS server's users. Any local process may connect to its
// port, and one without a login could publish into the pipeline (run
// commands in someone's workspace, text any number) or read every reply,
// so the server lets in only these:
//
//   - textslash: this process's own in-process connection, with a password
//     made at each start and kept in memory only; refused over TCP.
//   - admin: everything, for the operator's nats CLI, textslash provision
//     and services run apart against this server (NATS_URL, NATS_USER,
//     NATS_PASSWORD).
//   - tap: reads ts.> live and looks the streams up (nats sub, nats stream
//     ls, nats stream info); publishes nothing else, so no message and no
//     consumer (a push consumer delivers onto a subject of its choosing).
//   - channel-<name>, for each plug-in channel TEXTSLASH_CHANNELS names: the
//     rights of nats.conf's channel template (channellogin.go), so that a
//     channel run against the all-in-one runs as it will in production.
//
// admin's, tap's and the channels' passwords are made at the first start
// and kept in <data>/nats/<user>.env (a directory only textslash may open), as the
// NATS_URL, NATS_USER and NATS_PASSWORD lines the nats CLI and textslash's
// own programs read from their environment.
const (
	natsSelf  = "textslash"
	natsAdmin = "admin"
	natsTap   = "tap"
)

// InboxPrefix is where the replies to a NATS user's requests come: its
// own inboxes, not _INBOX.>, where any user could read the replies to
// everybody's requests (users' states, jobs handed to runners). Every
// program of textslash logging in as a user (NATS_USER) takes it as its
// inbox prefix, and nats.conf lets each service's user subscribe to its
// own only. The nats CLI takes it as --inbox-prefix (scripts/nats passes
// it from tap.env's NATS_INBOX_PREFIX).
func InboxPrefix(user string) string { return "_INBOX_" + user }

// tapInboxPrefix is tap's inbox prefix.
var tapInboxPrefix = InboxPrefix(natsTap)

// tapPermissions lets tap subscribe to ts.> (and its own replies) and
// publish only read-only JetStream API requests.
var tapPermissions = &server.Permissions{
	Publish: &server.SubjectPermission{Allow: []string{
		"$JS.API.INFO", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.LIST", "$JS.API.STREAM.INFO.*",
	}},
	Subscribe: &server.SubjectPermission{Allow: []string{"ts.>", tapInboxPrefix + ".>"}},
}

// natsLogins are the embedded server's passwords.
type natsLogins struct {
	dir       string            // where admin's and tap's are kept; "" when the server takes no TCP clients
	self      string            // this process's
	passwords map[string]string // admin's, tap's and the plug-in channels'
	channels  []string          // the plug-in channels with a login (channel-<name>)
}

// loadNATSLogins makes this process's password and reads admin's, tap's
// and those of the plug-in channels named (channel-<name>, channellogin.go)
// from dir, making those it does not find; dir "" (the server takes no
// TCP clients) gives this process's only.
func loadNATSLogins(dir string, channels []string) (*natsLogins, error) {
	l := &natsLogins{self: newToken(), passwords: map[string]string{}}
	if dir == "" {
		return l, nil
	}
	var err error
	if l.dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	l.channels = pluginChannels(channels)
	for _, user := range l.kept() {
		pw, err := readNATSPassword(l.file(user))
		if err != nil {
			return nil, err
		}
		if pw == "" {
			pw = newToken()
		}
		l.passwords[user] = pw
	}
	return l, nil
}

// kept are the users whose logins are kept in dir.
func (l *natsLogins) kept() []string {
	users := []string{natsAdmin, natsTap}
	for _, ch := range l.channels {
		users = append(users, channelUser(ch))
	}
	return users
}

// file is where user's login is kept.
func (l *natsLogins) file(user string) string { return filepath.Join(l.dir, user+".env") }

// users are the server's users (Options.Users). The server holds their
// passwords as bcrypt hashes, as it asks; the hashes never leave this
// process, so the least cost does.
func (l *natsLogins) users() ([]*server.User, error) {
	users := []*server.User{{
		Username: natsSelf, Password: l.self,
		AllowedConnectionTypes: map[string]struct{}{jwt.ConnectionTypeInProcess: {}},
	}}
	if pw, ok := l.passwords[natsAdmin]; ok {
		users = append(users, &server.User{Username: natsAdmin, Password: pw})
	}
	if pw, ok := l.passwords[natsTap]; ok {
		users = append(users, &server.User{Username: natsTap, Password: pw, Permissions: tapPermissions})
	}
	for _, ch := range l.channels {
		users = append(users, &server.User{Username: channelUser(ch), Password: l.passwords[channelUser(ch)], Permissions: channelPermissions(ch)})
	}
	for _, u := range users {
		hash, err := bcrypt.GenerateFromPassword([]byte(u.Password), bcrypt.MinCost)
		if err != nil {
			return nil, fmt.Errorf("%s's password: %w", u.Username, err)
		}
		u.Password = string(hash)
	}
	return users, nil
}

// login is this process's own login.
func (l *natsLogins) login() nats.Option { return nats.UserInfo(natsSelf, l.self) }

// write keeps admin's and tap's logins for the server listening at addr:
// the directory 0700, each file 0600, replaced whole.
func (l *natsLogins) write(addr net.Addr) error {
	url := "nats://" + addr.String()
	if a, ok := addr.(*net.TCPAddr); ok && a.IP.IsUnspecified() {
		url = "nats://" + net.JoinHostPort("127.0.0.1", fmt.Sprint(a.Port))
	}
	if err := os.MkdirAll(filepath.Dir(l.dir), 0o755); err != nil {
		return err
	}
	if err := os.Mkdir(l.dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if err := os.Chmod(l.dir, 0o700); err != nil {
		return err
	}
	for _, user := range l.kept() {
		body := fmt.Sprintf("NATS_URL=%s\nNATS_USER=%s\nNATS_PASSWORD=%s\n", url, user, l.passwords[user])
		if user != natsAdmin {
			body += "NATS_INBOX_PREFIX=" + InboxPrefix(user) + "\n"
		}
		if err := writePrivate(l.file(user), body); err != nil {
			return err
		}
	}
	return nil
}

// readNATSPassword is the NATS_PASSWORD of a login file; "" when there is
// no such file or line.
func readNATSPassword(path string) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if pw, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "NATS_PASSWORD="); ok {
			return pw, nil
		}
	}
	return "", sc.Err()
}

// writePrivate replaces path with body, readable by its owner only.
func writePrivate(path, body string) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.WriteString(body); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
