package dispatcher_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/dispatcher"
	"github.com/textslash/textslash/dispatcher/internal/fsm"
	"github.com/textslash/textslash/natstest"
)

// A run's question makes the person's next message its answer: the answer
// goes to the runner as an event, the question's timeout is armed and then
// disarmed, and the run goes on.
func TestPermissionAnswer(t *testing.T) {
	b := newBench(t, dispatcher.Config{})
	u := user(t, "alice")
	b.into(u, contract.StateWorking)
	b.event(contract.Event{Kind: contract.KindQuestion, User: u, JobID: "w1", Question: 1, Text: "Claude wants to run `npm i`."}, "1")
	b.waitState(u, contract.StateAwaitingPermission, "w1")
	b.waitRaw(contract.StreamTimers, contract.PermissionScheduleSubject(u), 1) // the timeout armed
	if got := b.say(u, "a1", "no, use pnpm"); len(got) != 1 || got[0] != "Your reply answered: Claude wants to run `npm i`.\nDenied, and Claude was told: use pnpm" {
		t.Errorf("notices %q", got)
	}
	b.waitState(u, contract.StateWorking, "w1")
	answers := b.events(u, contract.KindAnswer)
	if len(answers) != 1 || answers[0].JobID != "w1" || answers[0].Question != 1 || answers[0].Answer != contract.AnswerDeny || answers[0].Text != "use pnpm" {
		t.Errorf("answers %+v; want a denial of question 1 of w1 with the reason", answers)
	}
	b.waitRaw(contract.StreamTimers, contract.PermissionScheduleSubject(u), 0) // and disarmed
	if jobs := b.jobsOf(u); len(jobs) != 1 {
		t.Errorf("jobs %v; want only w1 (an answer is no message for the agent)", jobIDs(jobs))
	}
}

// The question reaches the person as the dispatcher takes it in: an
// answer sent at once can come first. It answers the question, and is
// neither added to the run nor queued.
func TestAnswerBeforeTheQuestionIsTakenIn(t *testing.T) {
	b := newBench(t, dispatcher.Config{})
	u := user(t, "alice")
	b.into(u, contract.StateWorking)
	b.holdRunEvents()
	b.event(contract.Event{Kind: contract.KindQuestion, User: u, JobID: "w1", Question: 1, Text: "Claude wants to run `npm i`."}, "1")
	if got := b.say(u, "a1", "yes"); len(got) != 1 || got[0] != fsm.MsgAllowed {
		t.Errorf("notices %q; want the answer taken", got)
	}
	answers := b.events(u, contract.KindAnswer)
	if len(answers) != 1 || answers[0].JobID != "w1" || answers[0].Question != 1 || answers[0].Answer != contract.AnswerAllow {
		t.Errorf("answers %+v; want question 1 of w1 allowed", answers)
	}
	b.releaseRunEvents()
	b.waitState(u, contract.StateWorking, "w1")
	if steers := b.events(u, contract.KindSteer); len(steers) != 0 {
		t.Errorf("steers %+v; want none", steers)
	}
	if got := b.queued(u); len(got) != 0 {
		t.Errorf("queued %q; want none", got)
	}
}

// Nobody answers: the dispatcher denies the question when its schedule
// fires, and tells the person.
func TestPermissionTimeout(t *testing.T) {
	b := newBench(t, dispatcher.Config{PermissionTimeout: time.Second})
	u := user(t, "alice")
	b.into(u, contract.StateWorking)
	b.event(contract.Event{Kind: contract.KindQuestion, User: u, JobID: "w1", Question: 1, Text: "Claude wants to write a.txt."}, "1")
	b.waitState(u, contract.StateAwaitingPermission, "w1")
	b.waitState(u, contract.StateWorking, "w1")
	// The answer and the notice are sent after the state is stored.
	natstest.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		answers := b.events(u, contract.KindAnswer)
		if len(answers) != 1 || answers[0].Answer != contract.AnswerDeny || answers[0].Text == "" {
			return fmt.Errorf("answers %+v; want one denial telling the agent nobody answered", answers)
		}
		for _, n := range b.events(u, contract.KindNotice) {
			if n.Text == "No answer in 1 second, so Claude was told no." {
				return nil
			}
		}
		return errors.New("the person was not told that the question went unanswered")
	})
}

// btw while a run works is handed to it; with steer on, so is every
// message; otherwise messages wait their turn.
func TestSteer(t *testing.T) {
	b := newBench(t, dispatcher.Config{})
	u := user(t, "alice")
	b.into(u, contract.StateWorking)
	if got := b.say(u, "s1", "btw use pnpm"); len(got) != 1 || got[0] != "Added to the current run: Claude sees it at its next step." {
		t.Errorf("btw: notices %q", got)
	}
	b.say(u, "s2", "steer on")
	b.say(u, "s3", "and add tests")
	b.say(u, "s4", "steer off")
	b.say(u, "s5", "then deploy")
	var texts []string
	for _, ev := range b.events(u, contract.KindSteer) {
		if ev.JobID != "w1" {
			t.Errorf("steer of %s; want w1", ev.JobID)
		}
		texts = append(texts, ev.Text)
	}
	if len(texts) != 2 || texts[0] != "use pnpm" || texts[1] != "and add tests" {
		t.Errorf("added to the run: %q; want the btw's text and the message sent with steer on", texts)
	}
	if q := b.queued(u); len(q) != 1 || q[0] != "s5" {
		t.Errorf("queue %q; want the message sent with steer off", q)
	}
}

// A message that is not yes, no or always, sent while a question waits,
// answers that question: the reply names the question it answered and what
// Claude was told, since the question may be far up the conversation.
func TestFreeTextAnswerNamesItsQuestion(t *testing.T) {
	b := newBench(t, dispatcher.Config{})
	u := user(t, "alice")
	b.into(u, contract.StateWorking)
	b.event(contract.Event{Kind: contract.KindQuestion, User: u, JobID: "w1", Question: 1,
		Text: "Claude wants to run `touch x` in your workspace. " + contract.QuestionPrompt}, "1")
	b.waitState(u, contract.StateAwaitingPermission, "w1")
	want := "Your reply answered: Claude wants to run `touch x` in your workspace.\nDenied, and Claude was told: touch two files"
	if got := b.say(u, "a1", "touch two files"); len(got) != 1 || got[0] != want {
		t.Errorf("notices %q; want %q", got, want)
	}
	answers := b.events(u, contract.KindAnswer)
	if len(answers) != 1 || answers[0].Answer != contract.AnswerDeny || answers[0].Text != "touch two files" {
		t.Errorf("answers %+v; want a denial telling Claude the person's words", answers)
	}
}

// With an agent spoken to over the Agent Client Protocol, textslash's own
// texts name it, not Claude; btw waits its turn (it takes no messages
// while it works).
func TestTextsNameTheACPAgent(t *testing.T) {
	for _, tt := range []struct{ agent, denied, allowed string }{
		{contract.AgentGemini, "Denied. Gemini was told no.", "Allowed. Gemini goes on."},
		{contract.ACPPrefix + "my-agent --acp", "Denied. The agent was told no.", "Allowed. The agent goes on."},
	} {
		b := newBench(t, dispatcher.Config{Agent: tt.agent})
		u := user(t, "alice")
		b.into(u, contract.StateWorking)
		b.event(contract.Event{Kind: contract.KindQuestion, User: u, JobID: "w1", Question: 1, Text: "Gemini wants to run `npm i`."}, "1")
		b.waitState(u, contract.StateAwaitingPermission, "w1")
		if got := b.say(u, "a1", "no"); len(got) != 1 || got[0] != tt.denied {
			t.Errorf("%s: notices %q; want %q", tt.agent, got, tt.denied)
		}
		b.event(contract.Event{Kind: contract.KindQuestion, User: u, JobID: "w1", Question: 2, Text: "Gemini wants to run `ls`."}, "2")
		b.waitState(u, contract.StateAwaitingPermission, "w1")
		if got := b.say(u, "a2", "yes"); len(got) != 1 || got[0] != tt.allowed {
			t.Errorf("%s: notices %q; want %q", tt.agent, got, tt.allowed)
		}
		if got := b.say(u, "s1", "btw use pnpm"); len(got) == 0 || got[0] != fsm.MsgNoSteer {
			t.Errorf("%s: btw: notices %q; want %q", tt.agent, got, fsm.MsgNoSteer)
		}
	}
}
