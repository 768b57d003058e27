// Package app is textslash's processes: `textslash serve` runs every
// service in one, and cmd/ingress, cmd/dispatcher, cmd/runner, cmd/media
// and cmd/egress each run one, from the same code and configuration.
package app

import (
	"fmt"
	"io"
)

// Main is the main of a single-service binary: it runs service, or with
// `shot` (the runner's binary) takes a screenshot from inside an agent's
// run.
func Main(service string, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "shot":
			if service == Runner {
				return Shot(args[1:], stdout, stderr)
			}
		case "version", "--version":
			fmt.Fprintln(stdout, "textslash", service, Version)
			return 0
		}
	}
	return Serve(service, []string{service}, args, stdout, stderr)
}

// Version is set at build time with -ldflags "-X github.com/textslash/textslash/cmd/internal/app.Version=...".
var Version = "dev"
