package contract

import (
	"net"
	"net/url"
	"strings"
)

// Rules of settings more than one service checks.

// BaseURL reports whether raw is an http(s)://host[:port][/path] URL that
// paths can be appended to: no query, no fragment.
func BaseURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Host != "" && (u.Scheme == "http" || u.Scheme == "https") &&
		u.RawQuery == "" && !u.ForceQuery && u.Fragment == ""
}

// TrimURL is raw without its trailing slashes, for paths to be appended
// to it; what is no URL with a host stays as it was, for BaseURL to refuse.
func TrimURL(raw string) string {
	if u, err := url.Parse(raw); err != nil || u.Host == "" {
		return raw
	}
	return strings.TrimRight(raw, "/")
}

// HostName is the name in a Host header or a URL's host, spelt the one way
// every comparison of host names uses: without the port and an IPv6
// address's brackets, in lower case, without a fully qualified name's
// trailing dot. "Example.COM.:443" and "example.com" are one host.
func HostName(hostport string) string {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
}

// TwilioCredential reports whether s can be a Twilio account SID or auth
// token: ASCII letters and digits. twilio-go sends nothing with others
// ("ApiError 21224 Invalid Password") and every webhook signature would
// fail, so services refuse them at start (TwilioCredentialRule).
func TwilioCredential(s string) bool {
	return s != "" && strings.IndexFunc(s, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9')
	}) < 0
}

// TwilioCredentialRule is why a Twilio credential is refused.
const TwilioCredentialRule = "letters and digits only, as Twilio's console shows it, without spaces, quotes or line breaks"
