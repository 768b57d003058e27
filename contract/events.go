package contract

// One constructor per event kind: what each kind carries is its
// parameters (KindDone's many fields the runner fills as the run ends).
// At is set when the event is published.

// NewState: the dispatcher moved u between states.
func NewState(u User, jobID, from, to string) Event {
	return Event{Kind: KindState, User: u, JobID: jobID, From: from, To: to}
}

// NewNotice: a short reply from textslash itself; jobID may be "".
func NewNotice(u User, jobID, text string) Event {
	return Event{Kind: KindNotice, User: u, JobID: jobID, Text: text}
}

// NewProgress: a line about what job jobID is doing now.
func NewProgress(u User, jobID, line string) Event {
	return Event{Kind: KindProgress, User: u, JobID: jobID, Text: line}
}

// NewImage: an image job jobID produced, stored in the media store.
func NewImage(u User, jobID string, img Image) Event {
	return Event{Kind: KindImage, User: u, JobID: jobID, Image: &img}
}

// NewDone: job jobID ended; the runner fills in how.
func NewDone(u User, jobID string) Event {
	return Event{Kind: KindDone, User: u, JobID: jobID}
}

// NewStarted: a runner started job jobID, which runs what.
func NewStarted(u User, jobID, what string) Event {
	return Event{Kind: KindStarted, User: u, JobID: jobID, Text: what}
}

// NewMore: the person asked for the next page of reply jobID.
func NewMore(u User, jobID string) Event {
	return Event{Kind: KindMore, User: u, JobID: jobID}
}

// NewDelivery: the provider said what became of its message providerID.
func NewDelivery(u User, providerID, status string, code int) Event {
	return Event{Kind: KindDelivery, User: u, ProviderID: providerID, Status: status, Code: code}
}

// NewUndelivered: egress gave up on text for the person after attempts
// tries (code: the provider's error), or holds it for their window.
func NewUndelivered(u User, jobID, text string, code, attempts int, held bool) Event {
	return Event{Kind: KindUndelivered, User: u, JobID: jobID, Text: text, Code: code, Attempts: attempts, Held: held}
}

// NewQuestion: job jobID asks the person its question n, answered by
// QuestionChoices.
func NewQuestion(u User, jobID string, n int, text string) Event {
	return Event{Kind: KindQuestion, User: u, JobID: jobID, Text: text, Question: n, Choices: QuestionChoices}
}

// NewAnswer: the person's answer to question n of job jobID, and what the
// agent is told with a denial.
func NewAnswer(u User, jobID string, n int, answer, told string) Event {
	return Event{Kind: KindAnswer, User: u, JobID: jobID, Question: n, Answer: answer, Text: told}
}

// NewSteer: the person added text to running job jobID.
func NewSteer(u User, jobID, text string) Event {
	return Event{Kind: KindSteer, User: u, JobID: jobID, Text: text}
}

// NewWindow: the person wrote (their message jobID) while egress held
// messages for them outside a reply window.
func NewWindow(u User, jobID string) Event {
	return Event{Kind: KindWindow, User: u, JobID: jobID}
}
