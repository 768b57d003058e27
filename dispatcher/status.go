// The status text: what is happening for the person, from their state,
// their run's last events and their queue.

package dispatcher

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/dispatcher/internal/fsm"
)

// msgWarm is status's line while the person's home (their sandbox and
// warm agent) is kept: until when, in their time zone. The shell is "the
// agent" in every text the person reads, so the line fits every agent.
const msgWarm = "Agent: warm until %s (%s), so your next message starts at once."

// msgBackground is status's line for each process the person's home keeps
// running past runs (`textslash background`): its id, command, how long.
const msgBackground = "In the background: %s %s, for %s (stop %s ends it)."

// status describes what is happening for the person.
func (d *Dispatcher) status(ctx context.Context, u contract.User, st contract.UserState) string {
	var b strings.Builder
	ago := func(t time.Time) string { return contract.Duration(time.Since(t).Round(time.Second)) }
	switch st.State {
	case contract.StateWorking:
		// The run's time, from its start: Since restarts when a question
		// is answered.
		began, started := st.Since, contract.Event{}
		if ev, ok := d.lastEvent(ctx, u, contract.KindStarted, st.JobID); ok {
			started = ev
			if !ev.At.IsZero() && ev.At.Before(began) {
				began = ev.At
			}
		}
		fmt.Fprintf(&b, "Working for %s", ago(began))
		if started.Text != "" {
			fmt.Fprintf(&b, " on: %s", started.Text)
		}
		b.WriteString(".")
		if ev, ok := d.lastEvent(ctx, u, contract.KindProgress, st.JobID); ok {
			fmt.Fprintf(&b, "\nLast step: %s (%s ago).", ev.Text, ago(ev.At))
		}
	case contract.StateAwaitingApproval:
		fmt.Fprintf(&b, "Waiting for your approval for %s. Reply approve or reject.", ago(st.Since))
	case contract.StateAwaitingPermission:
		fmt.Fprintf(&b, "Claude is waiting for your answer (for %s)", ago(st.Since))
		if ev, ok := d.lastEvent(ctx, u, contract.KindQuestion, st.JobID); ok && ev.Question == st.Question {
			fmt.Fprintf(&b, ":\n%s", ev.Text)
		} else {
			b.WriteString(". " + contract.QuestionPrompt)
		}
	default:
		b.WriteString("Idle: nothing is running.")
	}
	if st.Project != "" || len(st.Parked) > 0 {
		fmt.Fprintf(&b, "\nProject: %s.", contract.ProjectOf(st.Project))
		if n := len(st.Parked); n > 0 {
			fmt.Fprintf(&b, " Changes wait for your approval in %s (reply projects).", contract.Plural(n, "other project"))
		}
	}
	b.WriteString("\n" + fsm.ModeStatus(d.agent(), d.mode(st.Mode)))
	if st.Steer && d.agent() == fsm.AgentClaude {
		b.WriteString(" Messages sent while working are added to the run.")
	}
	if until := st.WarmUntil; !st.Running() && time.Now().Before(until) {
		// While a run works the home is in use: the line is for what
		// the person sends next, when nothing runs.
		loc := d.zone(st)
		fmt.Fprintf(&b, "\n"+msgWarm, until.In(loc).Format("15:04"), zoneName(loc))
	}
	if st.Running() || time.Now().Before(st.WarmUntil) {
		// What the home keeps running, as the last run's end said: it
		// ends with the home.
		for _, bg := range st.Background {
			fmt.Fprintf(&b, "\n"+msgBackground, bg.ID, bg.Command, lasted(time.Since(bg.Started)), bg.ID)
		}
	}
	if st.Sandbox != "" {
		b.WriteString("\n" + st.Sandbox)
	}
	if n := d.queueDepth(ctx, u); n > 0 {
		fmt.Fprintf(&b, "\n%s waiting.", contract.Plural(int(n), "message"))
	}
	return b.String()
}

// lasted is how long something has run, to the minute past one
// ("12m", "1h 5m"), to the second under it.
func lasted(d time.Duration) string {
	if d >= time.Minute {
		return contract.Duration(d.Round(time.Minute))
	}
	return contract.Duration(d.Round(time.Second))
}

// lastEvent is the user's last event of a kind, if it is about job.
func (d *Dispatcher) lastEvent(ctx context.Context, u contract.User, kind contract.EventKind, job string) (contract.Event, bool) {
	var ev contract.Event
	raw, err := d.events.GetLastMsgForSubject(ctx, contract.EventSubject(u, kind))
	if err != nil || contract.Decode(raw.Data, &ev) != nil || ev.JobID != job {
		return ev, false
	}
	return ev, true
}
