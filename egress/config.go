package egress

import (
	"errors"
	"time"

	"github.com/textslash/textslash/channel"
	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/egress/notionmirror"
)

// Config of the egress service.
type Config struct {
	// Channels are the channels on the port egress delivers to (Twilio's
	// WhatsApp and SMS, Telegram), each a channel.Sender and a
	// channel.Linker: their messages
	// carry the media service's signed links under its MediaBase; a
	// channel.Windowed one holds what its provider refuses outside its
	// reply window, a channel.Reporter waits for its delivery reports.
	Channels []channel.Channel
	// Notion, when set, mirrors Notion tasks' runs onto their pages.
	Notion *notionmirror.Config
	// Signer signs the image links egress hands out (media checks them).
	Signer contract.MediaSigner
}

// Default returns the configuration with every setting left zero set to
// its default, and settings normalised (URLs without their trailing
// slash, phone numbers written whatsapp:+1… made +1…). It never fails and
// never checks; it copies the nested configs it fills in, so the caller's
// stay as they were.
func (c Config) Default() Config {
	if c.Notion != nil {
		n := notionDefaults(*c.Notion)
		c.Notion = &n
	}
	return c
}

// Validate checks the configuration as it will run (call it on Default's
// result): nil, or every setting refused, each a *contract.ConfigError
// (errors.Is(err, contract.ErrConfig) holds), so that all can be fixed at
// once. The Signer is a handle, not a setting.
func (c Config) Validate() error {
	var errs []error
	if c.Notion != nil {
		errs = append(errs, validateNotion(*c.Notion))
	}
	return errors.Join(errs...)
}

// bad is egress's refusal of setting (its field path in Config); value
// is nil for secrets and for settings left empty.
func bad(setting string, value any, reason string) *contract.ConfigError {
	return contract.BadSetting("egress", setting, value, reason)
}

// notNegative refuses a setting below zero (zero takes its default).
func notNegative[T int | time.Duration](setting string, v T) error {
	if v < 0 {
		return bad(setting, v, "must not be negative")
	}
	return nil
}

// notionDefaults is n with its defaults and MediaURL without its trailing
// slash.
func notionDefaults(n notionmirror.Config) notionmirror.Config {
	n.MediaURL = contract.TrimURL(n.MediaURL)
	if n.ProgressEvery == 0 {
		n.ProgressEvery = notionmirror.DefaultProgressEvery
	}
	return n
}

// validateNotion refuses every setting of n (defaulted) that is wrong, the
// missing ones first.
func validateNotion(n notionmirror.Config) error {
	var errs []error
	if n.Client == nil {
		errs = append(errs, bad("Notion.Client", nil, "required for Notion: the client of its API"))
	}
	for _, s := range []struct{ setting, val, why string }{
		{"Notion.Database", n.Database, "the database whose tasks are mirrored"},
		{"Notion.StatusProperty", n.StatusProperty, "the status property set"},
		{"Notion.InProgress", n.InProgress, "the status set when a run starts"},
		{"Notion.Done", n.Done, "the status set when a run ends well"},
		{"Notion.Failed", n.Failed, "the status set when a run fails"},
		{"Notion.MediaURL", n.MediaURL, "where egress reads the images and files it uploads"},
	} {
		if s.val == "" {
			errs = append(errs, bad(s.setting, nil, "required for Notion: "+s.why))
		}
	}
	if n.MediaURL != "" && !contract.BaseURL(n.MediaURL) {
		errs = append(errs, bad("Notion.MediaURL", n.MediaURL, "want http(s)://host[:port] of the media service"))
	}
	return errors.Join(append(errs, notNegative("Notion.ProgressEvery", n.ProgressEvery))...)
}
