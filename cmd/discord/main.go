// Command discord runs textslash's Discord channel (package discord, on
// the channel kit) as its own process against the NATS server where
// textslash's services meet; see discord --help. textslash serve can run
// the same channel inside the all-in-one.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/discord"
)

const usage = `Usage: discord

Runs textslash's Discord channel as its own process: a bot on Discord's
gateway that takes people's DMs, and messages in servers that mention it,
hands them to textslash over NATS, and sends back the progress, replies,
images and files, questions and approvals (as buttons) of their runs. It
needs no public URL. The streams must be there (textslash provision, or
textslash serve running with its embedded NATS).

The bot's set-up (token, intents, invite scopes and permissions) is in
the README's "Discord" section.

Environment:
  NATS_URL               the NATS server textslash's services meet on
                         (required; textslash serve's embedded one is
                         nats://127.0.0.1:4222, its login in
                         <data>/nats/admin.env)
  NATS_USER              user to connect as: channel-discord under
                         nats.conf (allowed only the channel's subjects)
  NATS_PASSWORD          that user's password
  TEXTSLASH_LOG_LEVEL    debug, info (default), warn or error
%s
Logs are JSON lines on stderr.
`

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// run is the command: 0 when it stopped on a signal, 2 for bad usage or
// settings, 1 when it failed.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("discord", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintf(stdout, usage, envHelp()) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "discord: no arguments taken (%q); settings come from the environment, see discord --help\n", fs.Args())
		return 2
	}
	level, err := zerolog.ParseLevel(strings.ToLower(or(getenv("TEXTSLASH_LOG_LEVEL"), "info")))
	if err != nil {
		fmt.Fprintf(stderr, "TEXTSLASH_LOG_LEVEL: %v\n", err)
		return 2
	}
	log := zerolog.New(stderr).Level(level).With().Timestamp().Logger()
	cfg, err := discord.LoadEnv(getenv)
	if err == nil {
		err = cfg.Default().Validate()
	}
	if err != nil {
		log.Error().Err(err).Msg("discord settings refused; see discord --help")
		return 2
	}
	if getenv("NATS_URL") == "" {
		log.Error().Msg("NATS_URL: required (the NATS server textslash's services meet on; see discord --help)")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, getenv, cfg, log); err != nil {
		log.Error().Err(err).Msg("discord channel stopped")
		return 1
	}
	return 0
}

// serve connects to NATS as the other services do and runs the channel
// until ctx ends, then drains the connection (at most drainWithin).
func serve(ctx context.Context, getenv func(string) string, cfg discord.Config, log zerolog.Logger) error {
	closed := make(chan struct{})
	opts := []nats.Option{nats.Name("textslash discord"), nats.MaxReconnects(-1),
		nats.ClosedHandler(func(*nats.Conn) { close(closed) }),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			log.Warn().Err(err).Msg("NATS disconnected; reconnecting")
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { log.Info().Str("url", nc.ConnectedUrlRedacted()).Msg("NATS reconnected") }),
	}
	if user := getenv("NATS_USER"); user != "" {
		// Replies come on the user's own inboxes, as nats.conf lets each
		// user read (app.InboxPrefix).
		opts = append(opts, nats.UserInfo(user, getenv("NATS_PASSWORD")), nats.CustomInboxPrefix("_INBOX_"+user))
	}
	nc, err := nats.Connect(getenv("NATS_URL"), opts...)
	if err != nil {
		return fmt.Errorf("connect NATS_URL: %w", err)
	}
	log.Info().Str("url", nc.ConnectedUrlRedacted()).Int("allowed", len(cfg.Allowed)).Msg("connected to NATS; starting the Discord channel")
	err = discord.Serve(ctx, nc, cfg, log)
	if derr := nc.Drain(); derr == nil {
		select {
		case <-closed:
		case <-time.After(drainWithin):
			log.Warn().Dur("waited", drainWithin).Msg("NATS drain unfinished; closing")
			nc.Close()
		}
	}
	return err
}

// drainWithin bounds the drain of the NATS connection at the end.
const drainWithin = 5 * time.Second

// envHelp lists the channel's variables as usage shows them.
func envHelp() string {
	var b strings.Builder
	for _, v := range discord.Env {
		fmt.Fprintf(&b, "  %-22s %s\n", v.Name, wrap(v.Help, 25, 76))
	}
	return b.String()
}

// wrap breaks text into lines of at most width, indenting each after the
// first by indent.
func wrap(text string, indent, width int) string {
	var b strings.Builder
	col := indent
	for i, w := range strings.Fields(text) {
		if i > 0 && col+1+len(w) > width {
			b.WriteString("\n" + strings.Repeat(" ", indent))
			col = indent
		} else if i > 0 {
			b.WriteByte(' ')
			col++
		}
		b.WriteString(w)
		col += len(w)
	}
	return b.String()
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
