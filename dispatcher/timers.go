// Timeouts of an approval request and of a permission question: armed
// and disarmed as message schedules in TIMERS, and taken in when they fire
// (with the person's scheduled messages, schedules.go).

package dispatcher

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/dispatcher/internal/fsm"
)

// handleTimeout ends an approval request or a question nobody answered,
// and runs scheduled messages.
func (d *Dispatcher) handleTimeout(ctx context.Context, msg jetstream.Msg) error {
	if strings.HasSuffix(msg.Subject(), ".run") {
		return d.handleScheduled(ctx, msg)
	}
	var t contract.Timer
	if err := contract.Decode(msg.Data(), &t); err != nil {
		return err
	}
	in := fsm.Input{Kind: fsm.Timeout, ID: t.JobID}
	if t.Kind == contract.TimerPermission {
		in.Question = max(t.Question, 1)
	}
	return d.apply(ctx, t.User, in, nil)
}

// scheduleTimeout arms the timeout of a job's approval request (question
// 0) or of its permission question as a message schedule; it survives
// restarts because the stream holds it. rev is the revision of the state
// that armed it: the same job may arm the same timeout again (changes
// parked by use and brought back), and only a repeat of this publish may
// be deduplicated.
func (d *Dispatcher) scheduleTimeout(ctx context.Context, u contract.User, jobID string, question int, rev uint64) error {
	t := contract.Timer{User: u, JobID: jobID}
	subject, after := contract.ApprovalScheduleSubject(u), d.cfg.ApprovalTimeout
	if question > 0 {
		t.Kind, t.Question = contract.TimerPermission, question
		subject, after = contract.PermissionScheduleSubject(u), d.cfg.PermissionTimeout
	}
	data, err := contract.Encode(&t)
	if err != nil {
		return err
	}
	// Schedules are kept to the second: round up, never fire early. The
	// server copies the trace header onto the message that fires.
	at := time.Now().Add(after).Truncate(time.Second).Add(time.Second)
	msgID := contract.MsgID(u, jobID, "timeout", fmt.Sprint(question), fmt.Sprint(rev))
	if _, err := bus.Publish(ctx, d.js, subject, data, msgID,
		jetstream.WithScheduleAt(at), jetstream.WithScheduleTarget(contract.ApprovalExpiredSubject(u))); err != nil {
		return fmt.Errorf("schedule timeout: %w", err)
	}
	return nil
}

// cancelTimeout disarms the timeout of the approval request (question 0)
// or of the permission question.
func (d *Dispatcher) cancelTimeout(ctx context.Context, u contract.User, question int) error {
	subject := contract.ApprovalScheduleSubject(u)
	if question > 0 {
		subject = contract.PermissionScheduleSubject(u)
	}
	if err := d.timers.Purge(ctx, jetstream.WithPurgeSubject(subject)); err != nil {
		return fmt.Errorf("cancel timeout: %w", err)
	}
	return nil
}

// timedOut is what the person is told when nobody answered in time: the
// approval request (question 0), or a question.
func (d *Dispatcher) timedOut(question int) string {
	if question > 0 {
		return fmt.Sprintf("No answer in %s, so Claude was told no.", humanDuration(d.cfg.PermissionTimeout))
	}
	return fmt.Sprintf("No answer to the approval request in %s, so I stopped waiting. The changes stay in your workspace, uncommitted.",
		humanDuration(d.cfg.ApprovalTimeout))
}

// humanDuration writes 30m0s as "30 minutes".
func humanDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0 && d >= time.Hour:
		return contract.Plural(int(d/time.Hour), "hour")
	case d%time.Minute == 0 && d >= time.Minute:
		return contract.Plural(int(d/time.Minute), "minute")
	}
	return contract.Plural(int(d.Round(time.Second)/time.Second), "second")
}
