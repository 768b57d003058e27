package contract

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

var (
	// ErrInvalidUser means a channel or user id cannot be used in subjects.
	ErrInvalidUser = errors.New("invalid user")
	// ErrVersion means a payload was written by a newer contract version.
	ErrVersion = errors.New("unsupported payload version")
	// ErrInvalidPayload means a payload is not valid JSON for its subject or
	// lacks a required field.
	ErrInvalidPayload = errors.New("invalid payload")
	// ErrConfig is what every service's refusal of its configuration
	// wraps (a *ConfigError).
	ErrConfig = errors.New("bad configuration")
	// ErrTooManyCodes: Pairing.NewCode refuses a code while PairingPending
	// wait.
	ErrTooManyCodes = errors.New("too many pairing codes pending")
	// ErrNotPaired: Pairing.Revoke was asked for a person not paired in.
	ErrNotPaired = errors.New("no such person paired")
	// ErrBadSession means a web chat session was not issued by this
	// textslash (no signature, a wrong one, or a malformed value):
	// WebSessions.User.
	ErrBadSession = errors.New("not a web chat session of this server")
	// ErrMediaSignature: an image URL without a valid, unexpired signature
	// (MediaSigner.Check).
	ErrMediaSignature = errors.New("image link invalid or expired")
)

// ConfigError is a setting a service refuses. It names the setting as the
// service's Config does (the field's path: "Twilio.PublicURL"), never as a
// binary spells it: the binary maps the one to the other (its variables).
type ConfigError struct {
	Service string // "runner", "ingress", …
	Setting string // the field's path in the service's Config
	// Value is the setting as text, quoted when it is text; empty for
	// secrets and settings left empty.
	Value  string
	Reason string
	Err    error // the cause, if any
}

func (e *ConfigError) Error() string {
	s := e.Service + ": " + e.Setting
	if e.Value != "" {
		s += "=" + e.Value
	}
	s += ": " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap gives ErrConfig, and the cause.
func (e *ConfigError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrConfig}
	}
	return []error{ErrConfig, e.Err}
}

// BadSetting is a ConfigError with value as text: quoted when it is a
// string, left out when nil (a secret, or nothing set), a duration as it
// is written (10m, not 10m0s).
func BadSetting(service, setting string, value any, reason string) *ConfigError {
	e := &ConfigError{Service: service, Setting: setting, Reason: reason}
	switch v := value.(type) {
	case nil:
	case string:
		e.Value = fmt.Sprintf("%q", v)
	case time.Duration:
		e.Value = strings.ReplaceAll(Duration(v), " ", "")
	default:
		e.Value = fmt.Sprint(v)
	}
	return e
}
