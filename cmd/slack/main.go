// Command slack runs textslash's Slack channel (slack/) as a process of
// its own, with the channel kit, against the NATS server at NATS_URL;
// textslash serve runs the same channel inside the all-in-one when
// SLACK_BOT_TOKEN is set. slack --help lists its settings.
package main

import (
	"os"

	"github.com/textslash/textslash/cmd/internal/app"
)

func main() {
	os.Exit(app.ChannelMain("slack", os.Args[1:], os.Stdout, os.Stderr))
}
