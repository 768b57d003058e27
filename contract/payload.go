package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Inbound is one message a person sent, as ingress publishes it on
// InboundSubject. ID is the provider's message id (Twilio's MessageSid, a
// Telegram update id, a web chat client id); it is also the Nats-Msg-Id, the
// job id and the id every later event of this message carries.
type Inbound struct {
	V     int       `json:"v"`
	ID    string    `json:"id"`
	User  User      `json:"user"`
	Text  string    `json:"text"`
	Media []Media   `json:"media,omitempty"`
	At    time.Time `json:"at"`
	// Paired: the message was a pairing code that just paired the person
	// in; it is answered with a welcome, never run.
	Paired bool `json:"paired,omitempty"`
}

// Media is an attachment of an inbound message: an image, a voice note or
// any other file.
type Media struct {
	URL         string `json:"url"`
	ContentType string `json:"content_type"`
	// Name is the file's name as the person's app sent it (a Telegram
	// document's, a web chat upload's), if the channel gives one. It is
	// the person's text: the runner makes it safe before using it.
	Name string `json:"name,omitempty"`
	// Voice: a voice note or an audio recording, transcribed into the
	// message's text before the agent runs.
	Voice bool `json:"voice,omitempty"`
	// Seconds is its length when the channel says (Telegram does).
	Seconds int `json:"seconds,omitempty"`
}

// Job is a message the dispatcher has cleared to run now: the user has no
// other run. The runner executes it and answers with events.
type Job struct {
	V     int       `json:"v"`
	ID    string    `json:"id"`
	User  User      `json:"user"`
	Text  string    `json:"text"`
	Media []Media   `json:"media,omitempty"`
	At    time.Time `json:"at"` // when the person sent it
	// Action is empty for a message to the agent, or ActionApprove /
	// ActionReject for the person's answer to an approval request.
	Action string `json:"action,omitempty"`
	// NewSession asks the agent to start a fresh session (the "new" keyword).
	NewSession bool `json:"new_session,omitempty"`
	// Mode is how the agent may act: ModeAuto, ModeAsk or ModePlan (empty:
	// ModeAsk). Agents without permissions of their own (the shell) ignore it.
	Mode string `json:"mode,omitempty"`
	// Budget, when set, is what the run may still spend: the least left of
	// the person's and the deployment's budgets.
	Budget *Budget `json:"budget,omitempty"`
	// Project is the person's project the job runs in ("": the default).
	Project string `json:"project,omitempty"`
	// Worktree: the job runs on a branch of its own, textslash/<id>, in a
	// git worktree of the project (the person's "branches on"), which
	// approve merges and reject drops.
	Worktree bool `json:"worktree,omitempty"`
}

// Budget is what a run may spend.
type Budget struct {
	// LeftUSD is what is left; zero or less refuses the run.
	LeftUSD float64 `json:"left_usd"`
	// Of names the budget that leaves the least, for the person
	// ("your daily budget of $5.00").
	Of string `json:"of"`
}

// Cost is what runs cost: one run, or a person's or the deployment's runs
// of a day or a month (bucket costs).
type Cost struct {
	V            int     `json:"v"`
	USD          float64 `json:"usd"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	Runs         int     `json:"runs"`
	// Jobs are the last jobs counted, so that a done event read twice is
	// counted once.
	Jobs []string  `json:"jobs,omitempty"`
	At   time.Time `json:"at"`
}

// String says what c cost: "$0.0123, 12,345 tokens in, 678 out".
func (c Cost) String() string {
	return fmt.Sprintf("$%.4f, %s tokens in, %s out", c.USD, thousands(c.InputTokens), thousands(c.OutputTokens))
}

// thousands writes 12345 as 12,345.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Permission modes, the person's choice (the "mode" keyword).
const (
	// ModeAuto: the agent acts without asking (inside its sandbox).
	ModeAuto = "auto"
	// ModeAsk: every tool use that changes something is a question to the
	// person first (a question event), answered yes, no or always.
	ModeAsk = "ask"
	// ModePlan: the agent plans without changing anything; the plan is the
	// reply, and "go" carries it out in the person's usual mode.
	ModePlan = "plan"
)

// Modes lists the permission modes.
var Modes = []string{ModeAuto, ModeAsk, ModePlan}

// Job actions.
const (
	ActionApprove = "approve"
	ActionReject  = "reject"
	// ActionHome: the job's text is a keyword about the person's home,
	// which the runner holding it answers without the agent: "preview
	// <port>", "preview", "preview off", "previews", "stop <id>".
	ActionHome = "home"
)

// EventKind is the last token of an event subject.
type EventKind string

const (
	// KindState: the dispatcher moved the user between states (From, To).
	KindState EventKind = "state"
	// KindNotice: a short reply from textslash itself, not the agent
	// ("Got it, I'll process this next.").
	KindNotice EventKind = "notice"
	// KindProgress: a line about what the agent is doing now.
	KindProgress EventKind = "progress"
	// KindImage: an image the run produced, stored in the media object store.
	KindImage EventKind = "image"
	// KindDone: the run ended. Carries the reply text, every image of the run,
	// and how it ended. The dispatcher's cue to start the next message.
	KindDone EventKind = "done"
	// KindStarted: a runner started the job (Text: what it runs). Published
	// with a Nats-Msg-Id, so a runner learns from a duplicate ack that the
	// job was started before and must not run again.
	KindStarted EventKind = "started"
	// KindMore: the person asked for the next page of the last long reply;
	// paging is the channel's rule, so egress answers it.
	KindMore EventKind = "more"
	// KindDelivery: the provider reported what became of a message sent to
	// the person (Twilio's status callback): ProviderID names the message,
	// Status is the provider's status (sent, delivered, read, failed,
	// undelivered), Code its error code.
	KindDelivery EventKind = "delivery"
	// KindUndelivered: egress gave up on a message for the person (Text)
	// after Attempts tries; Code is the provider's error code. A dead
	// letter, for people and alerts to look at.
	KindUndelivered EventKind = "undelivered"
	// KindQuestion: the running agent asks the person's permission (Text:
	// the question; Question: its number in the job, from 1; Choices: the
	// replies that answer it). The runner asks one question at a time.
	KindQuestion EventKind = "question"
	// KindAnswer: the person's answer to question Question of job JobID
	// (Answer: AnswerAllow, AnswerAlways or AnswerDeny; Text: what the agent
	// is told with a denial), from the dispatcher to the runner.
	KindAnswer EventKind = "answer"
	// KindSteer: the person added Text to the running job JobID ("btw …"),
	// from the dispatcher to the runner, which hands it to the agent.
	KindSteer EventKind = "steer"
	// KindWindow: the person wrote (JobID: their message) on a channel with
	// a reply window (WhatsApp's 24 hours) while egress held messages for
	// them that the provider refused outside it (HeldKey): the window is
	// open, and egress sends them. Published by ingress before the message
	// itself, so they go out before its reply.
	KindWindow EventKind = "window"
)

// Run outcomes carried by done events.
const (
	StatusOK          = "ok"          // the agent finished
	StatusError       = "error"       // the agent failed; Text is a friendly message
	StatusTimeout     = "timeout"     // the run hit its time limit
	StatusInterrupted = "interrupted" // the runner died during the run; not run again
	StatusCanceled    = "canceled"    // the person said cancel
	StatusBudget      = "budget"      // a budget was used up: refused, or stopped mid-way
)

// User states kept by the dispatcher.
const (
	StateIdle             = "idle"
	StateWorking          = "working"
	StateAwaitingApproval = "awaiting_approval"
	// StateAwaitingPermission: the running agent waits for the person's
	// answer to a question.
	StateAwaitingPermission = "awaiting_permission"
)

// Event is the payload of every ts.ev subject. Kind says which fields are set.
type Event struct {
	V     int       `json:"v"`
	Kind  EventKind `json:"kind"`
	User  User      `json:"user"`
	JobID string    `json:"job_id,omitempty"`
	At    time.Time `json:"at"`

	// notice, progress, done: text for the person.
	Text string `json:"text,omitempty"`

	// state
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`

	// image: the one image; done: all images of the run, in order.
	Image  *Image  `json:"image,omitempty"`
	Images []Image `json:"images,omitempty"`

	// done
	Status     string  `json:"status,omitempty"`
	ExitCode   int     `json:"exit_code,omitempty"`
	DurationMS int64   `json:"duration_ms,omitempty"`
	CostUSD    float64 `json:"cost_usd,omitempty"`
	// The model's tokens the run used (input counts cache reads and writes).
	InputTokens  int  `json:"input_tokens,omitempty"`
	OutputTokens int  `json:"output_tokens,omitempty"`
	Truncated    bool `json:"truncated,omitempty"`
	// Approval: the run left changes for the person to approve or reject.
	Approval bool `json:"approval,omitempty"`
	// WarmUntil: the person's home (their sandbox and warm agent) is kept
	// until then, and a message before it starts at once. Zero: not kept
	// (a run outside a home, a runner that keeps none, or one that died).
	WarmUntil time.Time `json:"warm_until,omitzero"`
	// Background: what the person's home keeps running past runs (their
	// dev server, `textslash background`) as the run ended, oldest first;
	// status lists it while the home is warm.
	Background []Background `json:"background,omitempty"`
	// Sandbox: what the person's sandbox lacks on the runner that ran
	// them, in a sentence for status ("Sandbox here: no disk bound of your
	// own."); empty when it lacks nothing.
	Sandbox string `json:"sandbox,omitempty"`
	// Links: the preview links the run handed the person, oldest first.
	// The text has each URL too; channels with buttons show one that
	// opens it, the web chat a link that opens in a new tab.
	Links []Link `json:"links,omitempty"`

	// question, answer: the question's number in its job, from 1.
	Question int `json:"question,omitempty"`
	// answer: AnswerAllow, AnswerAlways or AnswerDeny.
	Answer string `json:"answer,omitempty"`
	// question, done awaiting approval: the replies that answer it, in
	// order (QuestionChoices; ApprovalChoices). Channels that
	// have buttons show them; a button sends its reply as the person's
	// message.
	Choices []string `json:"choices,omitempty"`

	// delivery, undelivered
	ProviderID string `json:"provider_id,omitempty"`
	Code       int    `json:"code,omitempty"`
	Attempts   int    `json:"attempts,omitempty"`
	// undelivered: the message is not lost but held (HeldKey) until the
	// person writes again (WhatsApp's window was closed).
	Held bool `json:"held,omitempty"`
}

// Background is a process a person's home keeps running past runs.
type Background struct {
	ID      string    `json:"id"`      // what `stop <id>` names
	Command string    `json:"command"` // its command line
	Started time.Time `json:"started"`
}

// Link is a link handed to the person (a preview link): URL, and Label,
// what a button or link that opens it says ("Open port 5173").
type Link struct {
	URL   string `json:"url"`
	Label string `json:"label"`
}

// Image describes an object in the media store: an image, or, when its
// ContentType is not an image's (IsImage), a file for the person that
// channels deliver as a document.
type Image struct {
	ID          string `json:"id"`
	ContentType string `json:"content_type"`
	Size        int    `json:"size"`
	// Name is a file's name, safe for a URL path and a download (SafeName).
	Name   string `json:"name,omitempty"`
	Width  int    `json:"width,omitempty"`
	Height int    `json:"height,omitempty"`
	// Caption is what the person is told about an image (the agent's
	// IMAGE_GENERATED|<path>|<caption>, or its description of the image):
	// channels send a captioned image in a message of its own, the
	// caption its text. Empty: the image goes with the reply.
	Caption string `json:"caption,omitempty"`
}

// Timer is the payload of an approval timeout: its schedule in TIMERS and
// the message the schedule fires.
type Timer struct {
	V     int    `json:"v"`
	User  User   `json:"user"`
	JobID string `json:"job_id"`
	// Kind is TimerPermission for a permission question's timeout (its
	// number in Question), empty for an approval timeout.
	Kind     string `json:"kind,omitempty"`
	Question int    `json:"question,omitempty"`
}

// Schedule is a message a person scheduled ("at 18:00 run the tests"):
// the payload of its schedule in TIMERS and of each message it fires.
type Schedule struct {
	V    int    `json:"v"`
	ID   string `json:"id"`
	User User   `json:"user"`
	Text string `json:"text"`
	// When says when it runs ("every weekday at 09:00 (Europe/Paris)").
	When    string    `json:"when"`
	Created time.Time `json:"created"`
}

// TimerPermission is Timer.Kind of a permission question's timeout.
const TimerPermission = "permission"

// Encode marshals a payload, stamping the current version.
func Encode(p interface{ setVersion() }) ([]byte, error) {
	p.setVersion()
	return json.Marshal(p)
}

func (p *Inbound) setVersion() { p.V = Version }

func (p *Job) setVersion() { p.V = Version }

func (p *Event) setVersion() { p.V = Version }

func (p *UserState) setVersion() { p.V = Version }

func (p *Timer) setVersion() { p.V = Version }

func (p *Cost) setVersion() { p.V = Version }

func (p *Schedule) setVersion() { p.V = Version }

// Decode unmarshals a payload and refuses versions newer than this contract.
// Every failure wraps ErrInvalidPayload or ErrVersion: a redelivery cannot
// fix it, so consumers terminate such messages.
func Decode(data []byte, p interface{ version() int }) error {
	if err := json.Unmarshal(data, p); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidPayload, err)
	}
	if v := p.version(); v > Version {
		return fmt.Errorf("%w: %d > %d", ErrVersion, v, Version)
	}
	if v, ok := p.(interface{ validate() error }); ok {
		if err := v.validate(); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidPayload, err)
		}
	}
	return nil
}

// Messages about a user's message must name both.
func (p *Inbound) validate() error { return validateRef(p.User, p.ID) }

func (p *Job) validate() error { return validateRef(p.User, p.ID) }

func (p *Timer) validate() error { return validateRef(p.User, p.JobID) }

func (p *Schedule) validate() error {
	if p.Text == "" {
		return errors.New("nothing to run")
	}
	return validateRef(p.User, p.ID)
}

func (p *Event) validate() error {
	if p.Kind == "" {
		return errors.New("no kind")
	}
	switch p.Kind {
	case KindDone, KindQuestion, KindAnswer, KindSteer:
		return validateRef(p.User, p.JobID)
	}
	return p.User.Validate()
}

func validateRef(u User, id string) error {
	if id == "" {
		return errors.New("no message id")
	}
	return u.Validate()
}

func (p *Inbound) version() int { return p.V }

func (p *Job) version() int { return p.V }

func (p *Event) version() int { return p.V }

func (p *UserState) version() int { return p.V }

func (p *Timer) version() int { return p.V }

func (p *Cost) version() int { return p.V }

func (p *Schedule) version() int { return p.V }

// MsgID is the Nats-Msg-Id of a message about one of a user's messages:
// provider ids are unique per user, so the user key makes them unique.
func MsgID(u User, id string, parts ...string) string {
	s := u.Key() + ":" + id
	for _, p := range parts {
		s += ":" + p
	}
	return s
}
