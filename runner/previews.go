package runner

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/agent"
	"github.com/textslash/textslash/runner/sandbox"
)

// Previews: a person's app, running in their home (a background process
// a run handed over), opened through a link of the preview server's
// (package preview). Runs reach them with `textslash background` and
// `textslash preview` (the endpoint's Home, home.Hands); the person with
// the keywords preview, previews and stop (a job of ActionHome, homeAgent).

// homeAgent answers the person's keywords about their home (a job of
// ActionHome) without an agent: preview [<port>|off], previews, stop <id>.
type homeAgent struct {
	r     *Runner
	token func() string // the run's token at the endpoint, for the screenshot
}

// Texts of homeAgent's replies.
const (
	MsgNoHome      = "Nothing of yours is running here: ask the agent to start your app (it runs it with textslash background <command>), then send preview <port>."
	MsgNothingHere = "Nothing listens in your workspace. Ask the agent to start your app's server (textslash background <command>), then send preview <port>."
	MsgPreview     = "Your app on port %d: %s\nThe link works for %s; preview off ends it."
)

func (a homeAgent) Run(ctx context.Context, run *agent.Run) (agent.Result, error) {
	person := run.Job.User.Key()
	f := strings.Fields(strings.ToLower(run.Job.Text))
	h := a.r.homes.Of(person)
	var text string
	switch {
	case len(f) == 0:
		text = MsgFailed
	case f[0] == "previews":
		text = a.r.homes.List(person, h)
	case f[0] == "stop" && len(f) == 2:
		text = fmt.Sprintf("No background process %s is running.", f[1])
		if h != nil && h.StopBackground(f[1]) > 0 {
			text = fmt.Sprintf("Stopped %s.", f[1])
		}
	case len(f) == 2 && f[1] == "off":
		links, procs := 0, 0
		if p := a.r.homes.Previews(); p != nil {
			links = p.Off(person)
		}
		if h != nil {
			procs = h.StopBackground("")
		}
		text = fmt.Sprintf("Previews off: %s ended, %s stopped.", contract.Plural(links, "link"),
			contract.Plural(procs, "background process", "background processes"))
	case h == nil:
		text = MsgNoHome
	default:
		text = a.preview(ctx, person, h, f[1:])
	}
	return agent.Result{Text: text}, nil
}

// preview opens a link to the port asked for, or the one port something
// listens on.
func (a homeAgent) preview(ctx context.Context, person string, h *sandbox.Home, args []string) string {
	ports := a.r.homes.AppPorts(h)
	var port int
	switch {
	case len(args) == 1:
		port, _ = strconv.Atoi(args[0])
	case len(ports) == 1:
		port = ports[0]
	case len(ports) == 0:
		return MsgNothingHere
	default:
		return fmt.Sprintf("Several ports listen in your workspace: %s. Send preview <port>.", joinInts(ports))
	}
	l, err := a.r.homes.OpenPreview(person, h, port)
	if err != nil {
		return "No preview: " + err.Error() + "."
	}
	text := fmt.Sprintf(MsgPreview, port, l.URL, contract.Duration(time.Until(l.Expires).Round(time.Minute)))
	if !slices.Contains(ports, port) {
		text += fmt.Sprintf("\nNothing listens on port %d in your workspace yet: start your app, then open the link.", port)
	} else if a.r.shots != nil {
		if err := a.r.shots.TakeFor(ctx, a.token(), l.URL); err != nil {
			a.r.log.Warn().Err(err).Str("user", person).Msg("preview's screenshot not taken")
		}
	}
	return text
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}
