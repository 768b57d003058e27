package preview

import (
	"fmt"
	"net/url"
	"strings"
)

// ParseURL reads a links' URL: http or https, its host "*." and a name
// (a wildcard of its own: https://*.preview.example.com), the one "*"
// where a link's id goes. A refusal wraps ErrBadURL and says why.
func ParseURL(pattern string) (*url.URL, error) {
	u, err := url.Parse(pattern)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrBadURL, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%w: the scheme is %q, not http or https", ErrBadURL, u.Scheme)
	case !strings.HasPrefix(u.Host, "*.") || strings.Count(u.Host, "*") != 1 || hostname(u.Host) == "*.":
		return nil, fmt.Errorf("%w: the host %q does not start with the one *. of a wildcard name", ErrBadURL, u.Host)
	}
	return u, nil
}

// CheckURL refuses a links' URL ParseURL refuses, and one whose links
// would share the web chat's name (chat: its URL; "" when unknown): on
// the chat's host or a subdomain of it, or with the chat under the
// wildcard, where the chat's cookies or a same-site request could reach
// the app, or its pages reach the chat.
func CheckURL(pattern, chat string) error {
	u, err := ParseURL(pattern)
	if err != nil || chat == "" {
		return err
	}
	c, err := url.Parse(chat)
	if err != nil || c.Host == "" {
		return nil // the chat's URL is someone else's to refuse
	}
	name := strings.ToLower(strings.TrimSuffix(hostname(u.Host), "."))[len("*."):]
	chatName := strings.ToLower(strings.TrimSuffix(c.Hostname(), "."))
	if name == chatName || strings.HasSuffix(name, "."+chatName) || strings.HasSuffix(chatName, "."+name) {
		return fmt.Errorf("%w: the links would be on the web chat's name %s: give them a name of their own", ErrBadURL, chatName)
	}
	return nil
}
