package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/kit"
)

const channelUsage = `Runs textslash's %[1]s channel alone, with the channel kit, against the NATS
server at NATS_URL (required), logged in as NATS_USER: nats.conf's
channel-%[1]s user (or admin). textslash provision (or textslash serve)
makes the streams it uses; it waits for them. Its HTTP port serves GET
/healthz and /readyz%[2]s.

textslash serve runs the same channel inside the all-in-one when its token is
set; run this binary instead when the other services run as processes of
their own (compose.yaml's %[1]s service), or to restart the channel alone.

Each flag is also read from the environment variable in brackets (a flag
given on the command line wins); those of the services are accepted and
ignored, so that every process can share one environment file.`

// channelRoutes is what a plug-in channel's binary serves besides its
// health.
var channelRoutes = map[string]string{
	"slack": ",\nand POST /slack/events (the Events API, without SLACK_APP_TOKEN)",
}

// ChannelMain is the main of a plug-in channel's binary (cmd/slack): it
// runs the channel name alone against NATS_URL until SIGINT or SIGTERM;
// with `healthcheck` it asks the channel running beside it (same PORT)
// whether it is ready.
func ChannelMain(name string, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "healthcheck":
			return healthcheck(stderr)
		case "version", "--version":
			fmt.Fprintln(stdout, "textslash", name, Version)
			return 0
		}
	}
	cfg, err := parseChannel(name, args, os.LookupEnv, stderr)
	if errors.Is(err, errHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	log := newLogger(cfg, stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := runChannel(ctx, name, cfg, log); err != nil {
		log.Error().Err(err).Str("channel", name).Msg("channel stopped")
		return 1
	}
	log.Info().Str("channel", name).Msg("channel stopped")
	return 0
}

// parseChannel reads the settings of channel name's binary: all of
// textslash's (one environment file), NATS_URL and the channel's own
// required and checked.
func parseChannel(name string, args []string, env lookupEnv, stderr io.Writer) (config, error) {
	var c config
	vars := settingsVars(false)
	vars["nats_url_help"] = "the NATS server textslash's services meet on (required)"
	if _, err := parse(name, fmt.Sprintf(channelUsage, name, channelRoutes[name]), &c, vars, args, env, stderr); err != nil {
		return c, err
	}
	p := plugins[name]
	switch {
	case c.NATSURL == "":
		return c, errors.New("NATS_URL: required (the channel meets the services on that NATS)")
	case !p.on(&c):
		return c, fmt.Errorf("the %s channel is off: set %s (docs/channels.md: %s)", name, p.token, name)
	case c.Port < 0 || c.Port > 65535:
		return c, fmt.Errorf("PORT=%d: not a port", c.Port)
	}
	_, err := p.open(&c, zerolog.Nop())
	return c, explain(err)
}

// channelStreams are the streams a plug-in channel looks up: its login
// may look up no other (IN's and EVENTS' subjects would say who wrote).
func channelStreams(name string) []string {
	return []string{bus.KVStream(contract.EgressBucketOf(name)), bus.KVStream(contract.BucketPeople), bus.ObjectStream(contract.MediaBucketOf(name))}
}

// runChannel runs channel name with the kit against cfg's NATS until ctx
// ends, serving its health and routes.
func runChannel(ctx context.Context, name string, cfg config, log zerolog.Logger) error {
	nc, err := nats.Connect(cfg.NATSURL, natsOptions(cfg, "textslash channel "+name)...)
	if err != nil {
		return fmt.Errorf("connect NATS_URL: %w", err)
	}
	defer drain(nc)()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	if err := waitStreams(ctx, js, channelStreams(name), log); err != nil {
		return err
	}
	ch, err := plugins[name].open(&cfg, log)
	if err != nil {
		return explain(err)
	}
	k, err := kit.Open(ctx, nc, ch, log)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	for route, h := range routes(ch, k) {
		mux.Handle(route, h)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if nc.Status() != nats.CONNECTED {
			http.Error(w, "nats "+nc.Status().String(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	g, ctx := errgroup.WithContext(ctx)
	ln, err := serveHTTP(ctx, g, cfg, hostCheck(cfg, log, mux))
	if err != nil {
		return err
	}
	g.Go(func() error { return k.Run(ctx) })
	log.Info().Str("channel", name).Str("addr", ln.Addr().String()).Str("nats", nc.ConnectedUrlRedacted()).Msg("channel ready")
	return g.Wait()
}
