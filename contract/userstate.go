package contract

import "time"

// UserState is the dispatcher's record of one user in the state bucket,
// keyed by User.Key. It changes only by compare-and-set on its revision.
// The person's Settings are embedded: in JSON their fields are the record's.
type UserState struct {
	V     int       `json:"v"`
	State string    `json:"state"`
	JobID string    `json:"job_id,omitempty"` // the running job, or the one awaiting approval
	Since time.Time `json:"since"`
	// Action, JobNewSession, JobMode and JobProject are how the running
	// job was started.
	Action        string `json:"action,omitempty"`
	JobNewSession bool   `json:"job_new_session,omitempty"`
	JobMode       string `json:"job_mode,omitempty"`
	JobProject    string `json:"job_project,omitempty"`
	// Queued is the id of the message queued last. Writing it makes
	// queueing a compare-and-set on this entry, so a run's end can never
	// miss a message queued while it was deciding.
	Queued string `json:"queued,omitempty"`
	// Finished holds the ids of the user's last finished jobs, newest last,
	// so that a message redelivered after its run is recognised and not
	// run again.
	Finished []string `json:"finished,omitempty"`
	// InSeq is the IN sequence of the last of the person's messages routed:
	// theirs before it are routed already (a redelivery of one is dropped),
	// and theirs after it still in IN go before a later one. 0: none yet.
	InSeq uint64 `json:"in_seq,omitempty"`
	// Question is the number of the running job's last question: the one
	// waiting for the person's answer (awaiting_permission), or the last
	// one answered (working).
	Question int `json:"question,omitempty"`
	// Asked is what that question asks, without QuestionPrompt ("Claude
	// wants to run `npm i` in your workspace."), for the reply to a free-text
	// answer.
	Asked string `json:"asked,omitempty"`
	// WarmUntil is what the newest done event said (Event.WarmUntil):
	// until when the person's home stays warm. A new run leaves it.
	WarmUntil time.Time `json:"warm_until,omitzero"`
	// Background is what the newest done event said (Event.Background):
	// what the home keeps running, as long as it is warm.
	Background []Background `json:"background,omitempty"`
	// Sandbox is what the newest done event said (Event.Sandbox): what
	// the person's sandbox lacks there.
	Sandbox string `json:"sandbox,omitempty"`
	Settings
}

// Settings are what a person chose or asked for, kept across every run:
// the state machine carries them whole, so a setting added here survives
// every transition without being named there.
type Settings struct {
	// NewSession: the next job starts a fresh agent session.
	NewSession bool `json:"new_session,omitempty"`
	// Mode is the person's permission mode ("" until they choose one: the
	// deployment's default); Usual is the mode "go" carries a plan out in,
	// their last mode other than plan ("": the default, or ask if that is
	// plan).
	Mode  string `json:"mode,omitempty"`
	Usual string `json:"usual,omitempty"`
	// Steer: every message sent while a run works is added to that run
	// (as "btw …" is), instead of waiting its turn.
	Steer bool `json:"steer,omitempty"`
	// Zone is the person's time zone for schedules (IANA name; "": the
	// server's).
	Zone string `json:"zone,omitempty"`
	// Project is the person's current project ("": the default): their
	// next messages run there (the running job's is UserState.JobProject).
	Project string `json:"project,omitempty"`
	// Parked are the jobs whose changes await approval in projects other
	// than the current one, by project name (ProjectOf): "use" sets them
	// aside and brings them back.
	Parked map[string]string `json:"parked,omitempty"`
	// Branches: each message runs on a branch of its own (Job.Worktree).
	Branches bool `json:"branches,omitempty"`
}

// Running reports whether a job runs in s: working, or waiting for the
// person's answer to its question.
func (s UserState) Running() bool {
	return s.State == StateWorking || s.State == StateAwaitingPermission
}

// FinishedKept is how many finished job ids a UserState remembers.
const FinishedKept = 64
