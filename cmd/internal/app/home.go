package app

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/textslash/textslash/runner/handover"
)

// Background is `textslash background <command> [args]`: inside an
// agent's run, hands command to the person's home as a process that
// outlives the run (a dev server); prints its id and its output file.
func Background(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stderr, `Usage: textslash background <command> [args...]

Starts command in your home, in this directory with this environment,
kept running after this run ends (a dev server); its output goes to .textslash/background/<id>.log in the
workspace. preview off, stop <id>, or the home's end stops it.
`)
		return 2
	}
	// The command starts where this is run, with its environment.
	form := url.Values{"arg": args, "env": os.Environ()}
	if dir, err := os.Getwd(); err == nil {
		form.Set("dir", dir)
	}
	rep, err := askHome("/background", form)
	if err != nil {
		fmt.Fprintln(stderr, "textslash background:", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s\n", rep.ID)
	fmt.Fprintf(stderr, "running in the background as %s; output in %s\n", rep.ID, rep.Log)
	return 0
}

// Preview is `textslash preview <port>`: inside an agent's run, prints a
// link that opens the app listening on port in the person's home; a
// screenshot of the page joins the reply.
func Preview(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprint(stderr, "Usage: textslash preview <port>\n\nPrints a link that opens the app listening on port in your home, for the person's phone.\n")
		return 2
	}
	if _, err := strconv.Atoi(args[0]); err != nil {
		fmt.Fprintln(stderr, "textslash preview: want a port number")
		return 2
	}
	rep, err := askHome("/preview", url.Values{"port": {args[0]}})
	if err != nil {
		fmt.Fprintln(stderr, "textslash preview:", err)
		return 1
	}
	fmt.Fprintln(stdout, rep.URL)
	return 0
}

func askHome(path string, form url.Values) (handover.HomeReply, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return handover.AskHome(ctx, os.Getenv(handover.ShotURLVar), os.Getenv(handover.ShotTokenVar), path, form)
}
