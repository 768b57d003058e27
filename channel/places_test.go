package channel_test

import (
	"context"
	"errors"
	"testing"

	"github.com/textslash/textslash/channel"
)

// A person is answered where their job came from, else where they last
// wrote, else in their direct conversation, opened once.
func TestPlacesConversation(t *testing.T) {
	p, ctx := channel.NewPlaces(), t.Context()
	opened := 0
	open := func(context.Context) (string, error) { opened++; return "D1", nil }
	for _, c := range []struct{ from, wrote, want string }{
		{want: "D1"}, {want: "D1"}, {from: "C9", want: "C9"}, {wrote: "C2", want: "C2"}, {from: "C9", want: "C9"},
	} {
		if c.wrote != "" {
			p.Wrote("U1", c.wrote)
		}
		if got, err := p.Conversation(ctx, "U1", c.from, open); err != nil || got != c.want {
			t.Errorf("from %q, wrote %q: %q, %v; want %q", c.from, c.wrote, got, err, c.want)
		}
	}
	if opened != 1 {
		t.Errorf("the direct conversation was opened %d times; want once", opened)
	}
	if _, err := p.Conversation(ctx, "U2", "", func(context.Context) (string, error) { return "", errors.New("no") }); err == nil {
		t.Error("a failed open: no error")
	}
}

// A job's progress is one message: posted, then edited, not sent again
// for the same line, posted anew when gone; another job posts its own.
func TestPlacesProgress(t *testing.T) {
	p, ctx := channel.NewPlaces(), t.Context()
	var posts, edits int
	gone := false
	post := func(context.Context) (string, error) { posts++; return "m" + string(rune('0'+posts)), nil }
	edit := func(context.Context, string) error {
		edits++
		if gone {
			return channel.ErrGone
		}
		return nil
	}
	step := func(job, line, want string, wantPosts, wantEdits int) {
		t.Helper()
		if id, err := p.Progress(ctx, "C1", job, line, post, edit); err != nil || id != want || posts != wantPosts || edits != wantEdits {
			t.Errorf("%s %q: id %q (%v), %d posts, %d edits; want %q, %d, %d", job, line, id, err, posts, edits, want, wantPosts, wantEdits)
		}
	}
	step("j1", "Reading", "m1", 1, 0)
	step("j1", "Running", "m1", 1, 1)
	step("j1", "Running", "m1", 1, 1)
	gone = true
	step("j1", "Writing", "m2", 2, 2)
	gone = false
	step("j2", "Reading", "m3", 3, 2)
	failed := errors.New("refused")
	if _, err := p.Progress(ctx, "C1", "j2", "Again", post, func(context.Context, string) error { return failed }); !errors.Is(err, failed) {
		t.Errorf("an edit refused: %v; want its error", err)
	}
}
