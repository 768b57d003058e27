package contract

// PairSubject is the pairing service of one channel's strangers:
// ts.svc.pair.<channel>. A PairRequest in, a PairReply out (or a micro
// error: 400 an unreadable request or a person of another channel, 503
// the buckets).
func PairSubject(channel string) string { return SubjectPair + "." + channel }

// SubjectPair is the root of the pairing services' subjects.
const SubjectPair = "ts.svc.pair"

// PairRequest asks to pair User in with Code, the text of their message.
type PairRequest struct {
	V    int    `json:"v"`
	User User   `json:"user"`
	Code string `json:"code"`
}

func (p *PairRequest) setVersion() { p.V = Version }

func (p *PairRequest) version() int { return p.V }

func (p *PairRequest) validate() error {
	return p.User.Validate()
}

// PairReply says whether the person was paired in.
type PairReply struct {
	V      int  `json:"v"`
	Paired bool `json:"paired"`
}

func (p *PairReply) setVersion() { p.V = Version }

func (p *PairReply) version() int { return p.V }
