package webchat_test

import (
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/channels/webchat"
	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/configtest"
	"github.com/textslash/textslash/natstest"
)

// Bad web chat settings are refused, each named by its field, by Validate
// and by New alike; the defaults pass.
func TestConfigRefused(t *testing.T) {
	ns := natstest.RunJetStream(t)
	sessions, _ := contract.NewWebSessions([]byte("web session key 0123456789"))
	for _, tt := range []struct {
		name     string
		cfg      webchat.Config
		settings []string
	}{
		{"negative body cap", webchat.Config{MaxBodyBytes: -1}, []string{"MaxBodyBytes"}},
		{"negative session burst", webchat.Config{NewSessions: webchat.SessionLimit{Burst: -1}}, []string{"NewSessions.Burst"}},
		{"negative session rate", webchat.Config{NewSessions: webchat.SessionLimit{Every: -time.Second}}, []string{"NewSessions.Every"}},
		{"negative keep-alive", webchat.Config{KeepAlive: -time.Second}, []string{"KeepAlive"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			configtest.Refused(t, tt.cfg.Default().Validate(), webchat.Config{}, tt.settings...)
			tt.cfg.Sessions = sessions
			_, err := webchat.New(tt.cfg, ns.JS, zerolog.Nop())
			configtest.Refused(t, err, webchat.Config{}, tt.settings...)
		})
	}
	if _, err := webchat.New(webchat.Config{}, ns.JS, zerolog.Nop()); err == nil {
		t.Error("New without a session key: no error")
	}
	if _, err := webchat.New(webchat.Config{Sessions: sessions}, ns.JS, zerolog.Nop()); err != nil {
		t.Errorf("New with the defaults: %v", err)
	}
}
