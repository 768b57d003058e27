// Command textslash runs the whole of textslash in one process: an embedded
// NATS server with JetStream (or any NATS given by NATS_URL) and the five
// services — ingress, dispatcher, runner, media, egress — with the local
// web chat on by default.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/textslash/textslash/cmd/internal/app"
)

const usage = `textslash drives a coding agent from your phone (WhatsApp, SMS, Telegram)
or from a local web chat. Messages travel over NATS JetStream.

Usage:
  textslash serve [flags]   run everything in one process (see textslash serve --help);
                            --services picks some (the rest run elsewhere, as
                            ingress, dispatcher, runner, media and egress)
  textslash provision       create the streams, consumers and buckets on NATS_URL
                            for services started on their own
  textslash pair            make a code that pairs one new person in (an hour,
                            one use): they send it as their first message
  textslash shot [--desktop] [--full] URL
                            inside an agent's run: screenshot a page for the reply
  textslash background <command>
                            inside an agent's run: keep command (a dev server)
                            running in the person's home after the run
  textslash preview <port>  inside an agent's run: a link to the app on port
  textslash version         print the version
  textslash help            show this help

Quick start:
  textslash serve           then open http://localhost:3000 and type: echo hello

Every flag of serve can also be set by the environment variable named in
its help; a flag given on the command line wins.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return app.Serve("textslash serve", nil, args[1:], stdout, stderr)
	case "provision":
		return app.Provision(args[1:], stderr)
	case "shot":
		return app.Shot(args[1:], stdout, stderr)
	case "background":
		return app.Background(args[1:], stdout, stderr)
	case "preview":
		return app.Preview(args[1:], stdout, stderr)
	case "pair":
		return app.Pair(args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "textslash", app.Version)
		return 0
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "textslash: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}
