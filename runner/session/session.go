// Package session keeps a person's agent session ids: the id of the last
// Claude Code session of each of their projects, in a file of the agent's
// home next to the sessions the CLI itself keeps there, so that the next
// message resumes it; and beside it the session's running total at its
// last result (total.go), from which a resumed CLI's costs are counted. The workspace reads and writes them; snapshots carry
// them from one runner to another.
package session

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/sandbox"
)

// File keeps the session id of the default project; a named project's is
// File.<name> (FileOf).
const File = ".textslash-session"

// idRE: the ids Claude Code uses (UUIDs), and nothing that could be read
// as a flag.
var idRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)

// Valid reports whether id is a session id fit to resume.
func Valid(id string) bool { return idRE.MatchString(id) }

// FileOf is the file in the agent's home keeping the session of a project
// ("": the default).
func FileOf(project string) string {
	if project == "" || project == contract.DefaultProject {
		return File
	}
	return File + "." + project
}

// Read reads the session id kept in file (FileOf) of home, or "" when
// there is none fit to resume.
func Read(home, file string) string {
	b, err := sandbox.ReadBeneath(home, file, 256)
	if err != nil {
		return ""
	}
	id := strings.TrimSpace(string(b))
	if !Valid(id) {
		return ""
	}
	return id
}

// Write keeps id in file (FileOf) of home.
func Write(home, file, id string) error {
	if !Valid(id) {
		return fmt.Errorf("session id %q", id)
	}
	return sandbox.WriteBeneath(home, file, []byte(id+"\n"), 0o600, nil)
}
