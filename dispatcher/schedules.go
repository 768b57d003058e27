package dispatcher

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/dispatcher/internal/fsm"
)

// SchedulesKept is how many schedules one person may have at once.
const SchedulesKept = 20

// zone is the person's time zone for schedules.
func (d *Dispatcher) zone(st contract.UserState) *time.Location {
	if st.Zone != "" {
		if loc, err := time.LoadLocation(st.Zone); err == nil {
			return loc
		}
	}
	return d.cfg.Location
}

// schedule arms what the person asked to run later, as a JetStream message
// schedule in TIMERS; its id comes from the message that asked, so a
// redelivery arms the same one again.
func (d *Dispatcher) schedule(ctx context.Context, u contract.User, st contract.UserState, msgID, kw, arg string) (string, error) {
	loc := d.zone(st)
	s, err := fsm.ParseSchedule(kw, arg, time.Now(), loc)
	if err != nil {
		return "I could not read that schedule: " + err.Error() + ".", nil
	}
	mine, err := d.schedules(ctx, u)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(u.Key() + ":" + msgID))
	id := hex.EncodeToString(sum[:3])
	if len(mine) >= SchedulesKept && !slices.ContainsFunc(mine, func(m contract.Schedule) bool { return m.ID == id }) {
		return fmt.Sprintf("You have %d schedules, the most there may be: unschedule one first.", len(mine)), nil
	}
	data, err := contract.Encode(&contract.Schedule{ID: id, User: u, Text: s.Text, When: s.When, Created: time.Now().UTC()})
	if err != nil {
		return "", err
	}
	opts := []jetstream.PublishOpt{jetstream.WithScheduleTarget(contract.ScheduledSubject(u))}
	switch {
	case s.Cron != "":
		opts = append(opts, jetstream.WithScheduleCron(s.Cron), jetstream.WithScheduleTimeZone(zoneName(loc)))
	case s.Every > 0:
		opts = append(opts, jetstream.WithScheduleEvery(s.Every))
	default:
		opts = append(opts, jetstream.WithScheduleAt(s.At))
	}
	if _, err := bus.Publish(ctx, d.js, contract.ScheduleSubject(u, id), data, contract.MsgID(u, msgID, "schedule"), opts...); err != nil {
		return "", fmt.Errorf("schedule: %w", err)
	}
	return fmt.Sprintf("Scheduled %s: “%s”, %s. Reply unschedule %s to stop it.", id, s.Text, s.When, id), nil
}

// schedules lists the person's schedules.
func (d *Dispatcher) schedules(ctx context.Context, u contract.User) ([]contract.Schedule, error) {
	info, err := d.timers.Info(ctx, jetstream.WithSubjectFilter(contract.UserSchedules(u)))
	if err != nil {
		return nil, fmt.Errorf("schedules: %w", err)
	}
	var out []contract.Schedule
	for subject := range info.State.Subjects {
		raw, err := d.timers.GetLastMsgForSubject(ctx, subject)
		if err != nil {
			continue // fired and gone meanwhile
		}
		var s contract.Schedule
		if contract.Decode(raw.Data, &s) == nil {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b contract.Schedule) int { return a.Created.Compare(b.Created) })
	return out, nil
}

// listSchedules answers the schedules keyword.
func (d *Dispatcher) listSchedules(ctx context.Context, u contract.User) (string, error) {
	mine, err := d.schedules(ctx, u)
	if err != nil || len(mine) == 0 {
		return "No schedules. Make one with at 18:00 <task> or every weekday 9:00 <task>.", err
	}
	var b strings.Builder
	b.WriteString("Your schedules:")
	for _, s := range mine {
		fmt.Fprintf(&b, "\n%s  %s: “%s”", s.ID, s.When, s.Text)
	}
	return b.String(), nil
}

// unschedule removes one of the person's schedules.
func (d *Dispatcher) unschedule(ctx context.Context, u contract.User, id string) (string, error) {
	mine, err := d.schedules(ctx, u)
	if err != nil {
		return "", err
	}
	if !slices.ContainsFunc(mine, func(s contract.Schedule) bool { return s.ID == id }) {
		return "No schedule " + id + ". Reply schedules to see yours.", nil
	}
	if err := d.timers.Purge(ctx, jetstream.WithPurgeSubject(contract.ScheduleSubject(u, id))); err != nil {
		return "", fmt.Errorf("unschedule: %w", err)
	}
	return "Unscheduled " + id + ".", nil
}

// handleScheduled runs a scheduled message that fired, as if the person
// had sent it then: each firing is its own message (by its sequence), run
// once.
func (d *Dispatcher) handleScheduled(ctx context.Context, msg jetstream.Msg) error {
	var s contract.Schedule
	if err := contract.Decode(msg.Data(), &s); err != nil {
		return err
	}
	md, err := msg.Metadata()
	if err != nil {
		return err
	}
	// The web chat knows a scheduled run by its id's sch- and shows it as
	// textslash's own, not as a message of the person's.
	in := contract.Inbound{ID: fmt.Sprintf("sch-%s-%d", s.ID, md.Sequence.Stream), User: s.User, Text: s.Text, At: md.Timestamp}
	if err := d.notice(ctx, s.User, in.ID, "scheduled", fmt.Sprintf("Scheduled task %s: “%s”", s.ID, s.Text)); err != nil {
		return err
	}
	return d.apply(ctx, s.User, fsm.Input{Kind: fsm.Message, ID: in.ID, Text: in.Text, Scheduled: true}, &in)
}

// serverZone is the server's own zone by its IANA name (Etc/UTC), so that
// schedules, status and cron name it alike; time.Local, which calls itself
// "Local", when the name does not load.
func serverZone() *time.Location {
	if loc, err := time.LoadLocation(zoneName(time.Local)); err == nil {
		return loc
	}
	return time.Local
}

// zoneName is loc's IANA name for cron schedules; the server's own zone
// is looked up ($TZ, /etc/localtime), else UTC.
func zoneName(loc *time.Location) string {
	if loc.String() != "Local" {
		return loc.String()
	}
	if tz := strings.TrimPrefix(os.Getenv("TZ"), ":"); tz != "" {
		if _, err := time.LoadLocation(tz); err == nil {
			return tz
		}
	}
	if target, err := filepath.EvalSymlinks("/etc/localtime"); err == nil {
		if _, name, ok := strings.Cut(target, "zoneinfo/"); ok {
			return name
		}
	}
	return "UTC"
}
