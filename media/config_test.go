package media_test

import (
	"testing"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/configtest"
	"github.com/textslash/textslash/media"
	"github.com/textslash/textslash/natstest"
)

// badConfigs are configurations media refuses, with the setting each
// refusal names.
var badConfigs = map[string]struct {
	cfg     media.Config
	setting string
}{
	"negative keep": {media.Config{Signer: signer, Keep: -1}, "Keep"},
	"keep far off":  {media.Config{Signer: signer, Keep: -100}, "Keep"},
}

// New refuses each bad configuration with a ConfigError naming the
// setting as its Config field, never as a variable of the binary.
func TestNewRefusesBadConfig(t *testing.T) {
	js := natstest.RunJetStream(t).JS
	for name, tc := range badConfigs {
		t.Run(name, func(t *testing.T) {
			_, err := media.New(tc.cfg, js, zerolog.Nop())
			if err == nil {
				t.Fatalf("New(Keep %d): got a Media, nil; want an error", tc.cfg.Keep)
			}
			configtest.Refused(t, err, media.Config{}, tc.setting)
		})
	}
}

// Validate, on Default's result, refuses what New refuses: the binary
// checks settings before it has a JetStream to hand New.
func TestValidateRefusesBadConfig(t *testing.T) {
	for name, tc := range badConfigs {
		t.Run(name, func(t *testing.T) {
			err := tc.cfg.Default().Validate()
			if err == nil {
				t.Fatalf("Validate(Keep %d): got nil; want an error", tc.cfg.Default().Keep)
			}
			configtest.Refused(t, err, media.Config{}, tc.setting)
		})
	}
}

// The zero Config, filled in by Default, keeps contract.MediaKeep images;
// a Keep set is kept; the caller's Config stays as it was.
func TestDefaultValidates(t *testing.T) {
	cfg := media.Config{}
	got := cfg.Default()
	if got.Keep != contract.MediaKeep {
		t.Errorf("Config{}.Default().Keep: got %d; want %d", got.Keep, contract.MediaKeep)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("Config{}.Default().Validate(): got %v; want nil", err)
	}
	if cfg.Keep != 0 {
		t.Errorf("after Default the caller's Keep is %d; want 0", cfg.Keep)
	}
	if got := (media.Config{Keep: 1}).Default(); got.Keep != 1 || got.Validate() != nil {
		t.Errorf("Config{Keep: 1}.Default(): got Keep %d, Validate %v; want 1, nil", got.Keep, got.Validate())
	}
}
