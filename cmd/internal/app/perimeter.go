package app

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/channels/webchat"
	"github.com/textslash/textslash/contract"
)

// What reaches textslash's HTTP listener, in the order it is checked:
//
//  1. hostCheck: the Host must be one textslash serves, or a page whose
//     DNS name was rebound to 127.0.0.1 would be same-origin with it.
//  2. internalOnly: /metrics and /readyz answer only requests that did
//     not come through the public side (PUBLIC_URL, a proxy or tunnel).
//  3. webAuth: the web chat wants its token whenever textslash can be
//     reached from elsewhere (exposed); a request with it is the
//     operator's, whom no limit of anonymous clients refuses.
//  4. webOrigin: the web chat's requests come from its own page, never
//     from another origin of the same browser (net/http's
//     CrossOriginProtection, on the event stream too).
//  5. The web chat's sessions are issued and signed by the server
//     (contract.WebSessions), a limited number per client without the
//     token.

// hosts is the set of Host names textslash answers.
type hosts struct {
	names   map[string]bool // lower case, without port
	anyIP   bool            // any IP literal (bound beyond loopback)
	oneWord bool            // single-label names such as a compose service's
}

// servedHosts: loopback names always (localhost, *.localhost, loopback
// addresses); PUBLIC_URL's host and TEXTSLASH_ALLOWED_HOSTS; and, bound
// beyond loopback, the bound name, any IP literal and single-label names
// (a container's service name). An IP literal or a single-label name
// cannot be rebound by somebody else's DNS: the names a rebinding attack
// uses are the attacker's own.
func servedHosts(cfg config) hosts {
	h := hosts{names: map[string]bool{"localhost": true}}
	if name := publicName(cfg.PublicURL); name != "" {
		h.names[name] = true
	}
	for _, n := range cfg.allowedHosts() {
		h.names[n] = true
	}
	if !loopback(cfg.Host) {
		h.anyIP, h.oneWord = true, true
		if cfg.Host != "" && net.ParseIP(cfg.Host) == nil {
			h.names[contract.HostName(cfg.Host)] = true
		}
	}
	return h
}

func (h hosts) serves(hostport string) bool {
	host := contract.HostName(hostport)
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback() || h.anyIP
	}
	switch {
	case host == "":
		return false
	case h.names[host], strings.HasSuffix(host, ".localhost"):
		return true
	case h.oneWord && !strings.Contains(host, "."):
		return true
	}
	return false
}

// hostCheck refuses requests for a host textslash does not serve before
// any handler sees them, logging (at most a few lines a minute) the host
// and the setting that would allow it.
func hostCheck(cfg config, log zerolog.Logger, next http.Handler) http.Handler {
	h := servedHosts(cfg)
	sampled := log.Sample(&zerolog.BurstSampler{Burst: 5, Period: time.Minute})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.serves(r.Host) {
			sampled.Warn().Str("host", r.Host).Str("remote", r.RemoteAddr).Str("path", r.URL.Path).
				Msg("request refused: textslash does not serve this host name (a DNS-rebinding page uses its own); if it should, add the name to TEXTSLASH_ALLOWED_HOSTS or set PUBLIC_URL")
			http.Error(w, "textslash does not serve the host "+r.Host, http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// exposed reports whether the web chat can be reached from other machines:
// bound beyond loopback, behind a public URL (a tunnel or proxy forwards to
// the loopback port), a provider configured (which needs one), or a host
// name allowed besides loopback's.
func (c *config) exposed() bool {
	return !loopback(c.Host) || c.PublicURL != "" || c.twilio() || c.telegram() || len(c.allowedHosts()) > 0
}

// allowedHosts is TEXTSLASH_ALLOWED_HOSTS, spelt as contract.HostName.
func (c *config) allowedHosts() []string {
	var names []string
	for _, n := range strings.Split(c.AllowedHosts, ",") {
		if n = contract.HostName(strings.TrimSpace(n)); n != "" {
			names = append(names, n)
		}
	}
	return names
}

// public reports whether r came through the public side: to PUBLIC_URL's
// or an allowed name, on any port and however spelt (contract.HostName),
// or through a proxy or tunnel (which say whom they forward for).
func (c *config) public(r *http.Request) bool {
	if r.Header.Get("X-Forwarded-For") != "" || r.Header.Get("Forwarded") != "" {
		return true
	}
	host := contract.HostName(r.Host)
	// A PUBLIC_URL on loopback (a local test of the providers) is no
	// public side.
	if host == publicName(c.PublicURL) && !loopback(host) {
		return true
	}
	return slices.Contains(c.allowedHosts(), host)
}

// publicName is the host name of PUBLIC_URL, spelt as contract.HostName;
// empty when there is none.
func publicName(publicURL string) string {
	u, err := url.Parse(publicURL)
	if err != nil {
		return ""
	}
	return contract.HostName(u.Host)
}

// internalOnly serves next to requests that did not come through the
// public side, and 404 to the others: /metrics and /readyz tell the
// world nothing.
func internalOnly(cfg config, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cfg.public(r) {
			http.NotFound(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// webAuth marks the requests that carry the web chat's token as the
// operator's (webchat.Operator: never refused a session for what anonymous
// clients used up). The token comes once in the URL (?token=); exposed,
// it becomes a cookie (Secure over https) and is required. Not exposed,
// the web chat needs no token, and no cookie is set: any port of this
// host would be sent it.
func webAuth(cfg config, log zerolog.Logger, next http.Handler) http.Handler {
	const cookie = "ts_token"
	exposed := cfg.exposed()
	want := []byte(cfg.WebToken)
	ok := func(s string) bool { return len(want) > 0 && subtle.ConstantTimeCompare([]byte(s), want) == 1 }
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if t := r.URL.Query().Get("token"); t != "" && ok(t) {
			if exposed {
				http.SetCookie(w, &http.Cookie{Name: cookie, Value: t, Path: "/", HttpOnly: true,
					Secure: webchat.HTTPS(r, cfg.PublicURL), SameSite: http.SameSiteLaxMode})
			}
			next.ServeHTTP(w, webchat.Operator(r))
			return
		}
		if c, err := r.Cookie(cookie); err == nil && ok(c.Value) {
			next.ServeHTTP(w, webchat.Operator(r))
			return
		}
		if !exposed {
			next.ServeHTTP(w, r)
			return
		}
		log.Info().Str("remote", r.RemoteAddr).Str("path", r.URL.Path).Msg("web chat refused: no token")
		http.Error(w, "textslash: open the web chat with the ?token= URL from textslash's log", http.StatusUnauthorized)
	})
}

// webOrigin refuses the web chat's requests that come from another origin
// of the browser — another port of localhost is the same site, so
// SameSite cookies go along — with net/http's CrossOriginProtection. It
// checks the event stream too, although a GET: a page of another origin
// must not open it with the person's cookie.
func webOrigin(log zerolog.Logger, next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	sampled := log.Sample(&zerolog.BurstSampler{Burst: 5, Period: time.Minute})
	refuse := func(w http.ResponseWriter, r *http.Request, err error) {
		sampled.Warn().Err(err).Str("origin", r.Header.Get("Origin")).Str("sec_fetch_site", r.Header.Get("Sec-Fetch-Site")).
			Str("path", r.URL.Path).Msg("web chat request from another origin refused")
		http.Error(w, "textslash: cross-origin request refused", http.StatusForbidden)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		check := r
		if r.URL.Path == "/api/events" {
			check = r.Clone(r.Context())
			check.Method = http.MethodPost
		}
		if err := cop.Check(check); err != nil {
			refuse(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// secret returns the secret kept in file, making it (128 random bits in
// hex) at the first call: a file of its own, readable only by textslash,
// in a directory only textslash may enter.
func secret(file string) (string, error) {
	if b, err := os.ReadFile(file); err == nil && len(strings.TrimSpace(string(b))) >= 16 {
		return strings.TrimSpace(string(b)), nil
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read secret: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return "", fmt.Errorf("secret: %w", err)
	}
	if err := os.Chmod(filepath.Dir(file), 0o700); err != nil {
		return "", fmt.Errorf("secret: %w", err)
	}
	// Linked into place, so that of two processes starting at once one
	// makes it and the other reads it.
	tmp := fmt.Sprintf("%s.%d", file, os.Getpid())
	if err := os.WriteFile(tmp, []byte(newToken()+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write secret: %w", err)
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, file); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("write secret: %w", err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("read secret: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// newToken is 128 random bits in hex.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
