// Command textslash runs the whole of textslash in one process: an embedded
// NATS server with JetStream (or any NATS given by NATS_URL) and the five
// services — ingress, dispatcher, runner, media, egress — with the local
// web chat on by default.
package main

import (
	"fmt"
	"io"
	"os"
)

const usage = `textslash drives a coding agent from your phone (WhatsApp, SMS, Telegram)
or from a local web chat. Messages travel over NATS JetStream.

Usage:
  textslash serve [flags]   run everything in one process (see textslash serve --help)
  textslash shot [--desktop] [--full] URL
                            inside an agent's run: screenshot a page for the reply
  textslash version         print the version
  textslash help            show this help

Quick start:
  textslash serve           then open http://localhost:3000 and type: echo hello

Every flag of serve can also be set by the environment variable named in
its help; a flag given on the command line wins.
`

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

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
		return serve(args[1:], stdout, stderr)
	case "shot":
		return shootPage(args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "textslash", version)
		return 0
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "textslash: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}
