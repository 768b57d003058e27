// Package channel is the one port every textslash channel is written on,
// built in (Twilio, Telegram, the web chat) or plugged in (Slack, Discord,
// a channel of your own): a Channel says its name, its rules and who it
// allows, and runs its inbound side with a Host that publishes what people
// write. What a channel can do beyond that it says by being more: a Sender
// (the runtime pushes replies through it: every channel but the web chat,
// whose browsers pull theirs), a Finder (a crash between a send and its
// record sends nothing twice), a Typer, a Fetcher (people's attachments),
// a Router (a provider's webhooks), a Pager (pages people open in a
// browser), a Retrier. Everything else is the runtime's (the kit's,
// egress's): the allowlist and pairing, per-person order, paging with
// MORE, progress coalesced, retries and dead letters, and each message
// sent once across restarts.
//
// The package imports the contract and the standard library only, so a
// channel's program links no other channel's code.
package channel

import (
	"context"
	"net/http"
	"time"

	"github.com/textslash/textslash/contract"
)

// Channel is one channel of textslash.
type Channel interface {
	// Name is the channel's subject token ("slack"): its people are
	// contract.User{Channel: Name(), ID: ...}, their messages
	// ts.in.<name>.<id>, their events ts.ev.<name>.<id>.<kind>.
	Name() string
	// Rules are its limits as the pusher applies them; zero limits take
	// PluginRules's.
	Rules() Rules
	// Allowed are the person ids its configuration allows in (Anyone:
	// everyone who reaches it); others can pair with a code.
	Allowed() []string
	// Run runs the channel's inbound side until ctx ends, publishing what
	// people send with h; its delivery runs beside it (a Sender's Send,
	// called by the runtime). An error is returned only for what retrying
	// cannot mend.
	Run(ctx context.Context, h Host) error
}

// Anyone, as the one id of a channel's Allowed, lets in everyone who
// reaches the channel: for a channel whose own check says who reaches it
// (the web chat: its sessions, behind its token when textslash can be
// reached from elsewhere).
const Anyone = "*"

// Host is what a channel runs with: handed to Run the same way by every
// runtime.
type Host interface {
	// Publish hands textslash one message a person sent: in.User.Channel
	// is the channel's Name and in.ID the provider's id of the message,
	// unique per person (a provider's retry of the same message within 10
	// minutes is stored once). A person neither allowed nor paired in is
	// refused with ErrNotAllowed, unless the message is a pairing code,
	// which pairs them in. It returns once JetStream has stored the
	// message: then answer the provider; on another error let it retry.
	Publish(ctx context.Context, in contract.Inbound) error
}

// Sender is a Channel whose replies the runtime pushes: it delivers
// messages to the people of the channel. A Channel that is no Sender is
// pulled (the web chat's browsers read their person's events themselves).
type Sender interface {
	// Send delivers one message and returns the provider's id for it.
	// Failures are *SendError.
	Send(ctx context.Context, u contract.User, m Message) (string, error)
}

// Finder is a Sender that can tell whether a message reached
// the provider: after a crash between a send and its record, the runtime
// asks it rather than sending again. Without one, such a message may go
// out twice.
type Finder interface {
	// Find returns the provider's id of a message like m to u created
	// since then, or "" when there is none.
	Find(ctx context.Context, u contract.User, m Message, since time.Time) (id string, err error)
}

// Typer is a Sender that can show the person that the agent
// is busy ("typing…"), for as long as the provider shows it; it is called
// again every Rules.TypingEvery while a run works.
type Typer interface {
	Typing(ctx context.Context, u contract.User, jobID string) error
}

// Fetcher is a Channel that takes attachments: Fetch downloads one it
// published in contract.Inbound.Media (by its URL), with the channel's own
// credentials, when a run needs it. It returns ErrNotMine for a URL that
// is no attachment of the channel, ErrTooLarge for one over
// MaxFetchBytes; contentType may be "" (the URL's media's is kept).
type Fetcher interface {
	Fetch(ctx context.Context, url string) (data []byte, contentType string, err error)
}

// Router is a Channel that takes requests over HTTP (a provider's
// webhooks): Routes are its patterns ("POST /slack/events") and their
// handlers, which publish with h (the Host Run is given), served by the
// process that runs it; nil when it needs none. They are reachable by
// anyone who reaches textslash: each checks the provider's signature.
type Router interface {
	Routes(h Host) map[string]http.Handler
}

// Pager is a Channel people use in a browser (the web chat): Pages are its
// patterns ("GET /{$}", "POST /api/messages") and their handlers, which
// publish with h. Unlike a Router's webhooks they are served behind the
// web chat's access check: the token whenever textslash can be reached
// from elsewhere, and requests of the page's own origin only.
type Pager interface {
	Pages(h Host) map[string]http.Handler
}

// Retrier is a Channel whose failed sends are tried within bounds of its
// own (else the runtime's: 6 tries from 1 s to 30 s).
type Retrier interface {
	Retry() Retry
}

// Explainer is a Sender that can tell an operator what its provider's
// error codes mean (Twilio's).
type Explainer interface {
	// Explain is the hint for code; "" when there is none.
	Explain(code int) string
}

// Explain is what s tells of its provider's error code; "" when s is no
// Explainer or knows nothing of code.
func Explain(s Sender, code int) string {
	if e, ok := s.(Explainer); ok {
		return e.Explain(code)
	}
	return ""
}

// Linker is a Channel whose provider downloads a reply's images and files
// by link (a built-in channel: Twilio, Telegram): Message.Media holds the
// media service's signed links under MediaBase, the base URL the media
// service is reached at (from the provider, or from the channel, which
// then reads them itself to upload them). A channel that is no Linker is
// handed the files' bytes, in Message.Attachments.
type Linker interface {
	MediaBase() string
}

// Windowed is a Channel whose provider refuses messages outside a reply
// window (WhatsApp's 24 hours after the person last wrote): a message
// refused with the provider's error code closedCode is held, with those
// behind it, until the person writes again, and template (a template the
// provider takes outside the window, "" for none) tells them once that
// something waits.
type Windowed interface {
	Window() (closedCode int, template string)
}

// Reporter is a Channel whose provider reports each message's delivery
// (Twilio's status callbacks, published as delivery events): a person's
// next message waits for the last one's report, at most SentWait (0: it
// reports nothing, nothing waits).
type Reporter interface {
	SentWait() time.Duration
}
