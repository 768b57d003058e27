package session

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/textslash/textslash/runner/agent"
	"github.com/textslash/textslash/runner/sandbox"
)

// total is what a total file (totalFile) holds: a session's running total
// at its last result, and the session it is of.
type total struct {
	Session string      `json:"session"`
	Total   agent.Usage `json:"total"`
}

// totalFile is the file beside the session file file (FileOf) keeping its
// session's running total: .textslash-session-total for the default
// project, .textslash-session-total.<name> for a named one (no project
// name holds a dot, so no session file is named so).
func totalFile(file string) string {
	return File + "-total" + strings.TrimPrefix(file, File)
}

// ReadTotal reads the running total of session id at its last result,
// kept beside the session file file (FileOf) of home (WriteTotal); ok is
// false when none is kept for that session.
func ReadTotal(home, file, id string) (u agent.Usage, ok bool) {
	b, err := sandbox.ReadBeneath(home, totalFile(file), 4096)
	if err != nil {
		return agent.Usage{}, false
	}
	var t total
	if json.Unmarshal(b, &t) != nil || t.Session != id || !Valid(id) {
		return agent.Usage{}, false
	}
	return t.Total, true
}

// WriteTotal keeps u, the running total of session id at its last
// result, beside the session file file (FileOf) of home, for the run
// resuming the session to count from: a Claude Code CLI that does not say
// what a result adds (2.1.197) starts its running totals there after a
// --resume.
func WriteTotal(home, file, id string, u agent.Usage) error {
	if !Valid(id) {
		return fmt.Errorf("session id %q", id)
	}
	b, err := json.Marshal(total{Session: id, Total: u})
	if err != nil {
		return err
	}
	return sandbox.WriteBeneath(home, totalFile(file), append(b, '\n'), 0o600, nil)
}
