package app

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kong"

	"github.com/textslash/textslash/contract"
)

// A setting whose text is more than a string has a type of its own: kong
// reads the text into it when it parses the settings, refusing text that
// is not one, as it refuses PORT=x (TEXTSLASH_RUN_MEMORY="lots": want a
// size like 512M or 2G), and its value is what the services' fields it
// sets take (2G is 2147483648 bytes). What a service accepts of that value
// is the service's to say, in its Config.Validate: a project of at most 0
// bytes is refused by the runner, not here.

// setting is a setting of a type of its own; value is what it gives the
// services' fields its sets tag names.
type setting interface{ value() any }

// size is a size: a number of bytes, or one ending in K, M or G. Its
// value is the bytes (int64).
type size string

func (s *size) Decode(ctx *kong.DecodeContext) error {
	return decode(ctx, s, func(text string) error {
		if _, err := parseBytes(text); err != nil {
			return errors.New("want a size like 512M or 2G")
		}
		return nil
	})
}

func (s size) value() any {
	n, _ := parseBytes(string(s)) // read by Decode
	return n
}

// parseBytes reads a size: a number of bytes, or one ending in K, M or G.
func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(strings.ToUpper(s))
	mult := int64(1)
	for suffix, m := range map[string]int64{"K": 1 << 10, "M": 1 << 20, "G": 1 << 30} {
		if t, ok := strings.CutSuffix(s, suffix); ok {
			s, mult = t, m
		}
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q", s)
	}
	return int64(n * float64(mult)), nil
}

// onOff is on or off (the sandbox: a part of the runner's Config that is
// there or not, set by hand).
type onOff string

func (o *onOff) Decode(ctx *kong.DecodeContext) error {
	return decode(ctx, o, oneOf("on", "off"))
}

// longReplies is page or truncate. Its value is whether replies are cut
// (egress's Rules.Truncate).
type longReplies string

func (l *longReplies) Decode(ctx *kong.DecodeContext) error {
	return decode(ctx, l, oneOf("page", "truncate"))
}

func (l longReplies) value() any { return l == "truncate" }

// zone is an IANA time zone's name, empty for the server's. Its value is
// the zone (*time.Location).
type zone string

func (z *zone) Decode(ctx *kong.DecodeContext) error {
	return decode(ctx, z, func(text string) error {
		_, err := time.LoadLocation(text)
		return err
	})
}

func (z zone) value() any {
	if z == "" {
		return time.Local
	}
	loc, _ := time.LoadLocation(string(z)) // read by Decode
	return loc
}

// people are comma-separated people as written to textslash (+15551234567,
// telegram:<chat id>). Their value is their keys in the people bucket
// ([]string, nil for none).
type people string

func (p *people) Decode(ctx *kong.DecodeContext) error {
	return decode(ctx, p, func(text string) error {
		_, err := people(text).keys()
		return err
	})
}

func (p people) value() any {
	keys, _ := p.keys() // read by Decode
	return keys
}

func (p people) keys() ([]string, error) {
	var keys []string
	for _, a := range strings.Split(string(p), ",") {
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		k, err := contract.AddressKey(a)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// decode reads a setting's text into s once check accepts it.
func decode[T ~string](ctx *kong.DecodeContext, s *T, check func(text string) error) error {
	var text string
	if err := ctx.Scan.PopValueInto(ctx.Value.Name, &text); err != nil {
		return err
	}
	if err := check(text); err != nil {
		return err
	}
	*s = T(text)
	return nil
}

// oneOf accepts the words given only.
func oneOf(words ...string) func(text string) error {
	return func(text string) error {
		for _, w := range words {
			if text == w {
				return nil
			}
		}
		return fmt.Errorf("want %s or %s", strings.Join(words[:len(words)-1], ", "), words[len(words)-1])
	}
}
