// Keywords: the words a person may send as their whole message, how a
// message is read as one (ParseKeyword), and the table of what each does
// (keywordSteps); the keywords that change a setting are in settings.go.

package fsm

import (
	"slices"
	"strconv"
	"strings"

	"github.com/textslash/textslash/contract"
)

// Keywords a person may send as their whole message (any case, trimmed).
const (
	Cancel  = "cancel"
	Approve = "approve"
	Reject  = "reject"
	Status  = "status"
	More    = "more"
	New     = "new"
	Help    = "help"
	// Cost reports what the person's runs cost, and their budgets.
	Cost = "cost"
	// Go carries out the plan just made, for a person in plan mode (for
	// anyone else "go" is a message like any other).
	Go = "go"
	// Keywords with an argument: "mode ask", "steer on", "btw use pnpm".
	Mode  = "mode"
	Steer = "steer"
	Btw   = "btw"
	// Scheduled messages: "at 18:00 run the tests", "in 2h look" (an at),
	// "every weekday 9:00 summarize open PRs", "schedules", "unschedule
	// 3f2a9c", "tz Europe/Paris".
	At         = "at"
	Every      = "every"
	Schedules  = "schedules"
	Unschedule = "unschedule"
	Zone       = "tz"
	// An admin's: pair makes a pairing code, people lists those paired
	// in, "revoke +15551234567" unpairs one.
	Pair   = "pair"
	People = "people"
	Revoke = "revoke"
	// Projects: "clone <url> [name]" adds one (a job of the runner's),
	// "projects" lists them, "use <name>" switches to one.
	Clone    = "clone"
	Projects = "projects"
	Use      = "use"
	// "branches on": each message runs on a branch of its own.
	Branches = "branches"
	// The person's home, answered by its runner (a job of
	// contract.ActionHome): "preview 5173" opens a link to the app on a
	// port, "preview" to the one port something listens on, "preview
	// off" ends the links and the background processes, "previews" lists
	// them, "stop 3f2a" ends one background process.
	Preview  = "preview"
	Previews = "previews"
	Stop     = "stop"
)

var keywords = []string{Cancel, Approve, Reject, Status, More, New, Help, Go, Cost, Schedules, Pair, People, Projects, Preview, Previews}

// ParseKeyword reports whether text is a keyword: one of the words above
// as the whole message (any case), or mode, steer or btw followed by their
// argument (arg).
func ParseKeyword(text string) (kw, arg string, ok bool) {
	t := strings.TrimSpace(text)
	k := strings.ToLower(t)
	if slices.Contains(keywords, k) {
		return k, "", true
	}
	first, rest, _ := strings.Cut(t, " ")
	rest = strings.TrimSpace(rest)
	switch first = strings.ToLower(strings.TrimRight(first, ":,")); first {
	case Mode, Steer, Branches:
		if !strings.Contains(rest, " ") && !strings.Contains(rest, "\n") {
			return first, strings.ToLower(rest), true
		}
	case Btw:
		if rest != "" {
			return Btw, rest, true
		}
	case At, Every:
		if looksScheduled(first, rest) {
			return first, rest, true
		}
	case "in":
		// "in 2h <task>" is an at; "in src, rename …" a message.
		if looksScheduled(At, t) {
			return At, "in " + rest, true
		}
	case Unschedule, Zone, Revoke:
		if rest != "" && !strings.ContainsAny(rest, " \n") {
			return first, rest, true
		}
	case Use:
		// "use pnpm" is a message unless the person has a project of
		// that name: the dispatcher tells (Input.Exists).
		if rest != "" && !strings.ContainsAny(rest, " \n") {
			return Use, strings.ToLower(rest), true
		}
	case Preview:
		// preview <port> | preview off; "preview the page" is a message.
		if r := strings.ToLower(rest); r == "off" || isPort(r) {
			return Preview, r, true
		}
	case Stop:
		// stop <id>: a background process's 4 hex digits.
		if len(rest) == 4 && strings.Trim(strings.ToLower(rest), "0123456789abcdef") == "" {
			return Stop, strings.ToLower(rest), true
		}
	case Clone:
		// clone <url> [name]: a URL has a scheme or is scp-like.
		f := strings.Fields(rest)
		if len(f) >= 1 && len(f) <= 2 && strings.Contains(f[0], ":") {
			return Clone, strings.Join(f, " "), true
		}
	}
	return "", "", false
}

// keywordStep is what a keyword does to a user.
type keywordStep func(s contract.UserState, in Input) (contract.UserState, []Effect)

// keywordSteps are the keywords, each with its step.
var keywordSteps = map[string]keywordStep{
	Help:       help,
	Status:     ask(ReportStatus),
	Cost:       ask(ReportCost),
	Schedules:  ask(ListSchedules),
	More:       ask(NextPage),
	Projects:   ask(ListProjects),
	At:         askWith(AddSchedule),
	Every:      askWith(AddSchedule),
	Pair:       askWith(Admin),
	People:     askWith(Admin),
	Revoke:     askWith(Admin),
	Unschedule: unschedule,
	Zone:       zone,
	New:        newSession,
	Mode:       mode,
	Steer:      steer,
	Branches:   branches,
	Btw:        btw,
	Go:         goPlan,
	Use:        use,
	Clone:      clone,
	Preview:    homeJob,
	Previews:   homeJob,
	Stop:       homeJob,
	Cancel:     cancel,
	Approve:    approve,
	Reject:     approve,
}

func keyword(s contract.UserState, in Input) (contract.UserState, []Effect) {
	if step, ok := keywordSteps[in.Keyword]; ok {
		return step(s, in)
	}
	return s, nil
}

// help sends the person the help for the agent here.
func help(s contract.UserState, in Input) (contract.UserState, []Effect) {
	return s, []Effect{{Kind: Notice, Text: HelpFor(in.Agent)}}
}

// ask is a keyword that asks the dispatcher for kind.
func ask(kind EffectKind) keywordStep {
	return func(s contract.UserState, _ Input) (contract.UserState, []Effect) {
		return s, []Effect{{Kind: kind}}
	}
}

// askWith is a keyword that asks the dispatcher for kind, with the
// keyword (Action) and its argument (Text).
func askWith(kind EffectKind) keywordStep {
	return func(s contract.UserState, in Input) (contract.UserState, []Effect) {
		return s, []Effect{{Kind: kind, Action: in.Keyword, Text: in.Arg}}
	}
}

func unschedule(s contract.UserState, in Input) (contract.UserState, []Effect) {
	return s, []Effect{{Kind: RemoveSchedule, Text: in.Arg}}
}

// btw adds its text to the running job, if its agent takes messages
// while it works; otherwise the text waits its turn, and the person is
// told.
func btw(s contract.UserState, in Input) (contract.UserState, []Effect) {
	if s.Running() && takesMessages(in.Agent) {
		return s, []Effect{{Kind: SteerRun, ID: s.JobID, Text: in.Arg}, {Kind: Notice, Text: MsgSteered}}
	}
	if s.Running() {
		next, eff := message(s, asMessage(in))
		return next, append([]Effect{{Kind: Notice, Text: MsgNoSteer}}, eff...)
	}
	// Nothing to add it to: it is a message like any other.
	return message(s, asMessage(in))
}

// goPlan carries out the plan just made, for a person in plan mode.
func goPlan(s contract.UserState, in Input) (contract.UserState, []Effect) {
	if s.Mode != contract.ModePlan || in.Agent == AgentShell {
		return message(s, asMessage(in))
	}
	switch {
	case s.Running() && s.JobID == in.ID:
		return restart(s)
	case s.State != contract.StateIdle:
		return s, []Effect{{Kind: Notice, Text: MsgGoWorking}}
	}
	// The plan's session goes on, whatever new said.
	e := Effect{Kind: Start, ID: in.ID, Action: Go, Mode: s.Usual, Project: s.Project}
	return working(s, e), []Effect{e}
}

// isPort reports whether s is a TCP port number, 1-65535.
func isPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n > 0 && n < 65536 && strconv.Itoa(n) == s
}

// homeJob is a keyword about the person's home, which the runner holding
// it answers (a job of contract.ActionHome), in its turn like a clone.
func homeJob(s contract.UserState, in Input) (contract.UserState, []Effect) {
	m := asMessage(in)
	m.Scheduled = true
	return message(s, m)
}
