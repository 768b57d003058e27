package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/dispatcher/internal/fsm"
)

// The dispatcher reads a person's projects (the runner writes them): to
// tell "use web" from a message, to refuse a clone before it is queued,
// and to list them.

// registry is u's projects; none yet is an empty list.
func (d *Dispatcher) registry(ctx context.Context, u contract.User) (contract.Projects, error) {
	var p contract.Projects
	e, err := d.projects.Get(ctx, u.Key())
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return p, nil
	}
	if err != nil {
		return p, fmt.Errorf("projects of %s: %w", u.Key(), err)
	}
	return p, contract.Decode(e.Value(), &p)
}

// checkProject fills what the machine needs to know of a use (does the
// project exist?) or a clone (why it cannot be done).
func (d *Dispatcher) checkProject(ctx context.Context, u contract.User, input *fsm.Input) error {
	if input.Kind != fsm.Keyword || (input.Keyword != fsm.Use && input.Keyword != fsm.Clone) {
		return nil
	}
	reg, err := d.registry(ctx, u)
	if err != nil {
		return err
	}
	if input.Keyword == fsm.Use {
		_, found := reg.Find(input.Arg)
		input.Exists = found || input.Arg == contract.DefaultProject
		return nil
	}
	_, name, err := cloneArgs(input.Arg)
	switch {
	case err != nil:
		input.Refusal = err.Error() + "."
	case name == contract.DefaultProject:
		input.Refusal = "default is the name of your first workspace: give the project another name (clone <url> <name>)."
	case named(reg) >= contract.ProjectsKept:
		input.Refusal = fmt.Sprintf("You have %d projects besides the default one, the most there may be.", named(reg))
	default:
		if _, taken := reg.Find(name); taken {
			input.Refusal = fmt.Sprintf("You have a project called %s already: clone <url> <another name>, or use %s.", name, name)
		}
	}
	return nil
}

// named counts the projects but the default one.
func named(reg contract.Projects) int {
	n := 0
	for _, p := range reg.List {
		if p.Name != contract.DefaultProject {
			n++
		}
	}
	return n
}

// cloneArgs reads a clone's argument, "<url> [name]": the URL and the
// project's name (by default the repository's).
func cloneArgs(arg string) (url, name string, err error) {
	f := strings.Fields(arg)
	if len(f) == 0 || len(f) > 2 {
		return "", "", errors.New("Say clone, a repository's URL and, if you like, a name for the project")
	}
	url = f[0]
	if name, err = contract.CloneURL(url); err != nil {
		return "", "", err
	}
	if len(f) == 2 {
		name = strings.ToLower(f[1])
		if err := contract.CheckProjectName(name); err != nil {
			return "", "", err
		}
	}
	return url, name, nil
}

// listProjects is the answer to "projects": each with its branch, the
// current one marked, and those whose changes wait for approval.
func (d *Dispatcher) listProjects(ctx context.Context, u contract.User, st contract.UserState) (string, error) {
	reg, err := d.registry(ctx, u)
	if err != nil {
		return "", err
	}
	list := reg.List
	if _, ok := reg.Find(contract.DefaultProject); !ok {
		list = append([]contract.Project{{Name: contract.DefaultProject}}, list...)
	}
	current := contract.ProjectOf(st.Project)
	var b strings.Builder
	b.WriteString("Your projects (* is the one your messages run in):\n")
	for _, p := range list {
		mark := " "
		if p.Name == current {
			mark = "*"
		}
		fmt.Fprintf(&b, "%s %s", mark, p.Name)
		if p.Branch != "" {
			fmt.Fprintf(&b, " (%s)", p.Branch)
		}
		waiting := st.Parked[p.Name] != "" ||
			(p.Name == current && st.State == contract.StateAwaitingApproval)
		if waiting {
			b.WriteString(", changes wait for your approval")
		}
		if p.URL != "" {
			fmt.Fprintf(&b, "\n    %s", p.URL)
		}
		b.WriteString("\n")
	}
	b.WriteString("Reply use <name> to switch, or clone <git url> [name] to add one.")
	return b.String(), nil
}
