package channeltest

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/textslash/textslash/contract"
)

// strangerDropped: a stranger's message is not stored, and they are sent
// nothing; the person's is stored, once, even when the provider delivers
// it twice.
func strangerDropped(t *testing.T, r *rig) {
	if again := r.Write(t, r.Stranger, r.Direct(r.Stranger), "let me in"); again != nil {
		again()
	}
	again := r.Write(t, r.Person, r.Direct(r.Person), "hello there")
	if again != nil {
		again()
	} else {
		t.Log("the provider never delivers a message twice: stored once is checked for one delivery")
	}
	// A last message, stored after the ones before it (each channel
	// publishes a person's messages in order): once it is in, so is
	// anything the channel made of the ones before.
	r.Write(t, r.Person, r.Direct(r.Person), "and this")
	r.waitStored(t, r.Person, "and this")
	var hello int
	for _, in := range r.stored(t) {
		if in.User.ID == r.Stranger {
			t.Errorf("IN holds the stranger's %q; want nothing of theirs", in.Text)
		}
		if in.Text == "hello there" {
			hello++
		}
	}
	if hello != 1 {
		t.Errorf("IN holds the person's message %d times; want once", hello)
	}
	for _, m := range r.Sent() {
		if m.Conversation == r.Direct(r.Stranger) {
			t.Errorf("the stranger was sent %q; want nothing", m.Text)
		}
	}
}

// replyWhereJobCameFrom: a job's reply goes to the conversation the
// job's message was written in, even after the person wrote elsewhere.
func replyWhereJobCameFrom(t *testing.T, r *rig) {
	if r.Shared == "" {
		t.Skip("the channel has no conversation but each person's direct one (Provider.Shared is empty)")
	}
	r.Write(t, r.Person, r.Shared, "build it here")
	job := r.waitStored(t, r.Person, "build it here")
	r.said(t, "meanwhile in my DM")
	r.publish(t, contract.Event{Kind: contract.KindDone, JobID: job.ID, Text: "built where you asked"})
	m := r.waitSent(t, "built where you asked")
	if m.Conversation != r.Shared {
		t.Errorf("the reply went to %q; want %q, where its job came from (not the DM, %q)", m.Conversation, r.Shared, r.Direct(r.Person))
	}
}

// progressEditsOneMessage: a job's progress lines are one message,
// edited, not a message each.
func progressEditsOneMessage(t *testing.T, r *rig) {
	if r.NoEdit != "" {
		t.Skip("progress is not edited in place: " + r.NoEdit)
	}
	job := r.said(t, "work on it")
	r.publish(t, contract.Event{Kind: contract.KindProgress, JobID: job.ID, Text: "step 1: reading"})
	r.waitSent(t, "step 1: reading")
	for _, line := range []string{"step 2: running", "step 3: writing"} {
		r.publish(t, contract.Event{Kind: contract.KindProgress, JobID: job.ID, Text: line})
	}
	// The last line replaces the one before it, which waits for its turn
	// (Rules.ProgressEvery) and is dropped.
	m := r.waitSent(t, "step 3: writing")
	if all := r.sentWith("step "); len(all) != 1 {
		t.Errorf("progress came as %d messages %s; want one, edited", len(all), sentTexts(all))
	}
	if m.Edits < 1 {
		t.Errorf("the progress message was edited %d times; want at least once", m.Edits)
	}
}

// buttons: a question's choices are buttons, and pressing one sends the
// choice as the person's next message.
func buttons(t *testing.T, r *rig) {
	if r.Press == nil {
		t.Skip("the channel shows no buttons (Provider.Press is nil)")
	}
	job := r.said(t, "tidy up")
	r.publish(t, contract.NewQuestion(r.user(r.Person), job.ID, 1, "May I run rm -rf build?"))
	q := r.waitSent(t, "May I run rm -rf build?")
	if !slices.Equal(q.Choices, contract.QuestionChoices) {
		t.Fatalf("the question's buttons are %q; want %q", q.Choices, contract.QuestionChoices)
	}
	r.Press(t, r.Person, q, contract.ReplyAlways)
	in := r.waitStored(t, r.Person, contract.ReplyAlways)
	if in.ID == job.ID {
		t.Errorf("the press was stored as the question's job %q; want a message of its own", in.ID)
	}
}

// notSentTwice: a message the provider took whose answer was lost (the
// channel killed in the middle of the send, then started again) is found
// by the channel's Finder, not sent again.
func notSentTwice(t *testing.T, r *rig) {
	switch {
	case !r.sender:
		t.Skip("the channel is pulled (no channel.Sender): nothing is sent to it; its people read their events from the stream")
	case !r.finder:
		t.Skip("the channel is no channel.Finder: after a crash between a send and its record it may send the message twice")
	case r.Hold == nil:
		t.Skip("the fake cannot hold a send's answer (Provider.Hold is nil)")
	}
	job := r.said(t, "ship it")
	r.Hold("shipped, once")
	r.publish(t, contract.Event{Kind: contract.KindDone, JobID: job.ID, Text: "shipped, once"})
	r.waitSent(t, "shipped, once")
	// The provider has it; the channel never heard back. Kill it.
	r.restart(t)
	r.publish(t, contract.Event{Kind: contract.KindNotice, Text: "back after the restart"})
	r.waitSent(t, "back after the restart")
	r.settled(t) // the event in the killed channel's hands came again and was settled
	if got := r.sentWith("shipped, once"); len(got) != 1 {
		t.Errorf("the provider holds the reply %d times %s; want once", len(got), sentTexts(got))
	}
}

// spoofRefused: a message the real provider would not send (unsigned, or
// forged to claim the person) is refused, and nothing of it stored.
func spoofRefused(t *testing.T, r *rig) {
	if r.Spoof == nil {
		t.Skip("the fake has no spoof path (Provider.Spoof is nil)")
	}
	switch err := r.Spoof(t, "spoofed: delete everything"); {
	case errors.Is(err, ErrNotPossible), errors.Is(err, ErrUnguarded):
		t.Skip(err)
	case err != nil:
		t.Fatal(err)
	}
	r.said(t, "the real me")
	for _, in := range r.stored(t) {
		if strings.Contains(in.Text, "spoofed") {
			t.Errorf("IN holds the spoof %q of %s; want it refused", in.Text, in.User.ID)
		}
	}
}
