package contract

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// WebSessions issues and checks web chat sessions. A session is a random
// user id on ChannelWeb and an HMAC-SHA256 of it under a key only
// textslash holds: a browser cannot choose its own id (another person's
// included), so the cookie is the session's only proof and nothing need
// be recorded.
type WebSessions struct{ key []byte }

// NewWebSessions signs sessions with key (at least 16 bytes).
func NewWebSessions(key []byte) (WebSessions, error) {
	if len(key) < 16 {
		return WebSessions{}, errors.New("web session key: at least 16 bytes")
	}
	return WebSessions{key: key}, nil
}

// Valid reports whether s was made by NewWebSessions (has its key).
func (s WebSessions) Valid() bool { return len(s.key) >= 16 }

// New returns a fresh session: the cookie value and its user.
func (s WebSessions) New() (string, User) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	return id + "." + s.sign(id), User{Channel: ChannelWeb, ID: id}
}

// User is the web chat user of a session cookie's value; ErrBadSession
// when this textslash did not issue it.
func (s WebSessions) User(cookie string) (User, error) {
	id, sig, ok := strings.Cut(cookie, ".")
	if !ok || !s.Valid() || !hmac.Equal([]byte(sig), []byte(s.sign(id))) {
		return User{}, ErrBadSession
	}
	u, err := NewUser(ChannelWeb, id)
	if err != nil {
		return User{}, fmt.Errorf("%w: %w", ErrBadSession, err)
	}
	return u, nil
}

func (s WebSessions) sign(id string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("textslash web session\x00" + id))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:18])
}

// WebSessionCookieName is the session cookie's name over https or not.
func WebSessionCookieName(https bool) string {
	if https {
		return WebSessionCookieHTTPS
	}
	return WebSessionCookie
}
