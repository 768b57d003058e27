package fsm

import "errors"

// ErrSchedule: a schedule that cannot be read (ParseSchedule); its text is
// what the person is told, with examples of what can be.
var ErrSchedule = errors.New(`say when, then the task: "at 6pm <task>", "at tomorrow 9:30 <task>", "at monday 9am <task>", "at 2026-12-01 18:00 <task>", "in 2h <task>", "every weekday 9am <task>" or "every 30m <task>"`)
