// Command discord runs textslash's Discord channel (discord/) as a
// process of its own, with the channel kit, against the NATS server at
// NATS_URL; textslash serve runs the same channel inside the all-in-one
// when DISCORD_BOT_TOKEN is set. discord --help lists its settings.
package main

import (
	"os"

	"github.com/textslash/textslash/cmd/internal/app"
)

func main() {
	os.Exit(app.ChannelMain("discord", os.Args[1:], os.Stdout, os.Stderr))
}
