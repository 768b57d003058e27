package workspace

import (
	"errors"
	"io/fs"
	"strings"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/sandbox"
)

// requestFile in the agent's home keeps the request (the person's
// message, as a commit subject) whose run asked for approval in the
// default project; requestFile.<name> in project name (requestFileOf).
// approve commits the changes under it.
const requestFile = ".textslash-request"

// approvedBody is the body of the commit approve makes under the person's
// request; approvedSubject the whole message when no request is known.
const (
	approvedBody    = "Approved from textslash."
	approvedSubject = "Changes approved from textslash"
)

// subjectMax is the most characters of a commit subject taken from a
// request (git's customary 72, the ellipsis included).
const subjectMax = 72

// requestFileOf is the file in the agent's home naming the request of
// project's open approval request.
func requestFileOf(project string) string {
	return requestFile + "." + contract.ProjectOf(project)
}

// commitSubject is a request made a commit subject: its first line that
// is not blank, spaces trimmed, cut to subjectMax with an ellipsis.
func commitSubject(request string) string {
	for line := range strings.Lines(request) {
		line = strings.Join(strings.Fields(line), " ")
		if line == "" {
			continue
		}
		if r := []rune(line); len(r) > subjectMax {
			line = strings.TrimSpace(string(r[:subjectMax-1])) + "…"
		}
		return line
	}
	return ""
}

// NoteRequest keeps in home the request whose run asks for approval of
// project's changes, for approve's commit (an empty one removes the
// note).
func NoteRequest(home, project, request string) error {
	subject := commitSubject(request)
	if subject == "" {
		if err := sandbox.RemoveBeneath(home, requestFileOf(project)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	return sandbox.WriteBeneath(home, requestFileOf(project), []byte(subject+"\n"), 0o600, nil)
}

// notedRequest is the request noted in home for project's approval
// request, as a commit subject; "" when none is.
func notedRequest(home, project string) string {
	b, err := sandbox.ReadBeneath(home, requestFileOf(project), 1024)
	if err != nil {
		return ""
	}
	return commitSubject(string(b))
}

// commitMessage is the message arguments of the git commit of changes
// approved after request (notedRequest, NoteRequest): the request as the subject, said
// to be approved from textslash; without one, approvedSubject.
func commitMessage(request string) []string {
	if request == "" {
		return []string{"-m", approvedSubject}
	}
	return []string{"-m", request, "-m", approvedBody}
}
