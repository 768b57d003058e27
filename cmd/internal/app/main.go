// Package app is textslash's processes: `textslash serve` runs every
// service in one, and cmd/ingress, cmd/dispatcher, cmd/runner, cmd/media
// and cmd/egress each run one, from the same code and configuration.
package app

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// Main is the main of a single-service binary: it runs service; with
// `shot` (the runner's binary) it takes a screenshot from inside an agent's
// run, and with `healthcheck` it asks the service running beside it (same
// PORT) whether it is ready: a container's healthcheck, in images without
// curl.
func Main(service string, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "shot":
			if service == Runner {
				return Shot(args[1:], stdout, stderr)
			}
		case "background", "preview":
			if service == Runner {
				return map[string]func([]string, io.Writer, io.Writer) int{"background": Background, "preview": Preview}[args[0]](args[1:], stdout, stderr)
			}
		case "healthcheck":
			return healthcheck(stderr)
		case "version", "--version":
			fmt.Fprintln(stdout, "textslash", service, Version)
			return 0
		}
	}
	return Serve(service, []string{service}, args, stdout, stderr)
}

// Version is set at build time with -ldflags "-X github.com/textslash/textslash/cmd/internal/app.Version=...".
var Version = "dev"

// healthcheck GETs /readyz on 127.0.0.1:$PORT: 0 when ready, 1 otherwise.
func healthcheck(stderr io.Writer) int {
	port := os.Getenv("PORT")
	if port == "" {
		port = "3000"
	}
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://127.0.0.1:" + port + "/readyz")
	if err != nil {
		fmt.Fprintln(stderr, "healthcheck:", err)
		return 1
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		fmt.Fprintf(stderr, "healthcheck: %s: %s", resp.Status, body)
		return 1
	}
	return 0
}
