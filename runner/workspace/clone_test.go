package workspace

import (
	"slices"
	"strings"
	"testing"
)

// A clone keeps the ssh command a run was given with the person's key.
func TestCloneEnvKeepsTheRunsSSHCommand(t *testing.T) {
	withKey := cloneEnv([]string{"GIT_SSH_COMMAND=ssh -i /k -o BatchMode=yes"})
	var ssh []string
	for _, e := range withKey {
		if strings.HasPrefix(e, "GIT_SSH_COMMAND=") {
			ssh = append(ssh, e)
		}
	}
	if len(ssh) != 1 || !strings.Contains(ssh[0], "-i /k") {
		t.Errorf("GIT_SSH_COMMAND %q; want the run's own, alone", ssh)
	}
	if got := cloneEnv(nil); !slices.Contains(got, "GIT_TERMINAL_PROMPT=0") || !slices.ContainsFunc(got, func(e string) bool {
		return strings.HasPrefix(e, "GIT_SSH_COMMAND=ssh -o BatchMode=yes")
	}) {
		t.Errorf("cloneEnv(nil) = %q", got)
	}
}
