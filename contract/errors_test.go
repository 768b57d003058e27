package contract_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/textslash/textslash/contract"
)

func TestConfigErrorNamesTheServiceAndSetting(t *testing.T) {
	cause := errors.New("no such user")
	for _, tc := range []struct {
		err  *contract.ConfigError
		want string
	}{
		{&contract.ConfigError{Service: "runner", Setting: "Concurrency", Value: "0", Reason: "must be at least 1"}, "runner: Concurrency=0: must be at least 1"},
		{&contract.ConfigError{Service: "egress", Setting: "Twilio.AuthToken", Reason: "required"}, "egress: Twilio.AuthToken: required"},
		{&contract.ConfigError{Service: "runner", Setting: "AgentUser", Value: `"bob"`, Reason: "not found", Err: cause}, `runner: AgentUser="bob": not found: no such user`},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q; want %q", got, tc.want)
		}
		wrapped := fmt.Errorf("starting: %w", tc.err)
		if !errors.Is(wrapped, contract.ErrConfig) {
			t.Errorf("%q does not wrap ErrConfig", tc.err)
		}
		if tc.err.Err != nil && !errors.Is(wrapped, cause) {
			t.Errorf("%q does not wrap its cause", tc.err)
		}
	}
}

func TestBadSettingQuotesTextValues(t *testing.T) {
	if got := contract.BadSetting("ingress", "Twilio.PublicURL", "ftp://x", "want https://host").Error(); got != `ingress: Twilio.PublicURL="ftp://x": want https://host` {
		t.Errorf("got %q", got)
	}
	if got := contract.BadSetting("media", "Keep", -1, "at least 1").Error(); got != "media: Keep=-1: at least 1" {
		t.Errorf("got %q", got)
	}
	if got := contract.BadSetting("egress", "Twilio.AuthToken", nil, "required").Error(); got != "egress: Twilio.AuthToken: required" {
		t.Errorf("got %q", got)
	}
}

func TestBaseURL(t *testing.T) {
	for raw, want := range map[string]bool{
		"https://example.com": true, "http://127.0.0.1:8080": true, "https://example.com/prefix/": true,
		"": false, "example.com": false, "ftp://example.com": false, "https://": false,
		"https://example.com/?a=1": false, "https://example.com/?": false, "https://example.com/#top": false,
	} {
		if got := contract.BaseURL(raw); got != want {
			t.Errorf("BaseURL(%q) = %v; want %v", raw, got, want)
		}
	}
}

func TestTwilioCredential(t *testing.T) {
	for s, want := range map[string]bool{
		"AC0123456789abcdefABCDEF01234567": true, "0123456789abcdef0123456789abcdef": true,
		"": false, "token\n": false, `"token"`: false, "my-secret": false, "tökén": false, "a b": false,
	} {
		if got := contract.TwilioCredential(s); got != want {
			t.Errorf("TwilioCredential(%q) = %v; want %v", s, got, want)
		}
	}
}
