package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/ingress"
	"github.com/textslash/textslash/runner"
	"github.com/textslash/textslash/runner/sandbox"
)

// Serve runs the given services (ingress, dispatcher, runner, media,
// egress; nil for all of them) until SIGINT or SIGTERM: `textslash serve`
// and each single-service binary. name is the command, for --help.
func Serve(name string, services []string, args []string, stdout, stderr io.Writer) int {
	started := time.Now()
	cfg, err := parseConfig(name, services, args, os.LookupEnv, stderr)
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
	// Stopping, the process waits for runs to finish (TEXTSLASH_STOP_GRACE);
	// a second signal ends it at once, which loses nothing JetStream holds.
	go func() { <-ctx.Done(); stop() }()
	if err := runServe(ctx, cfg, log, started); err != nil {
		if errors.Is(err, errDataInUse) {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			return 1
		}
		if errors.Is(err, contract.ErrConfig) {
			// A setting only a running service could check: said as the
			// settings checked before anything started are.
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			return 2
		}
		log.Error().Err(err).Msg("textslash stopped")
		return 1
	}
	log.Info().Msg("textslash stopped")
	return 0
}

func newLogger(cfg config, w io.Writer) zerolog.Logger {
	level, err := zerolog.ParseLevel(cfg.LogLevel)
	if err != nil || level == zerolog.NoLevel {
		level = zerolog.InfoLevel
	}
	console := cfg.LogFormat == "console"
	if cfg.LogFormat == "auto" {
		if f, ok := w.(*os.File); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
				console = true
			}
		}
	}
	// Milliseconds: what a message's steps took is read from the lines'
	// times, and most take less than a second.
	zerolog.TimeFieldFormat = "2006-01-02T15:04:05.000Z07:00"
	if console {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05.000"}
	}
	return zerolog.New(w).Level(level).With().Timestamp().Logger()
}

// serveHTTP serves h on cfg's host and PORT in g until ctx ends, then
// shuts the server down (5 s for the requests in flight; the web chat's
// event streams end with the web chat, as ctx ends).
func serveHTTP(ctx context.Context, g *errgroup.Group, cfg config, h http.Handler) (net.Listener, error) {
	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s (PORT, TEXTSLASH_HOST): %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	g.Go(func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("http: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	})
	return ln, nil
}

// parts are the services cfg runs, in the order of All (whatever
// TEXTSLASH_SERVICES's), then the plug-in channels switched on.
func (cfg *config) parts(ctx context.Context, env partEnv) ([]part, error) {
	var parts []part
	for _, name := range All {
		if !cfg.runs(name) {
			continue
		}
		p, err := makeParts[name](ctx, cfg, env)
		if err != nil {
			return nil, explain(err) // a setting only the running service could check
		}
		parts = append(parts, p)
	}
	if cfg.runsPlugins() {
		for _, name := range cfg.pluginsOn() {
			p, err := pluginPart(ctx, name, cfg, env)
			if err != nil {
				return nil, err
			}
			parts = append(parts, p)
		}
	}
	return parts, nil
}

// runServe runs NATS and this process's services until ctx ends.
func runServe(ctx context.Context, cfg config, log zerolog.Logger, started time.Time) error {
	lock, err := lockData(cfg.Data)
	if err != nil {
		return err
	}
	defer lock.Close()
	nc, shutdownNATS, err := connectNATS(cfg, log)
	if err != nil {
		return err
	}
	defer shutdownNATS()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	if err := cfg.openStreams(ctx, js, log); err != nil {
		return err
	}
	env := partEnv{js: js, log: log}
	if env.signer, err = contract.NewMediaSigner([]byte(cfg.MediaKey), cfg.MediaTTL); err != nil {
		return err
	}
	if cfg.Web {
		if env.sessions, cfg.WebToken, err = webSecrets(cfg); err != nil {
			return err
		}
	}
	parts, err := cfg.parts(ctx, env)
	if err != nil {
		return err
	}
	// A runner that exits for want of work ends the whole process.
	ctx, idleStop := context.WithCancel(ctx)
	defer idleStop()
	g, ctx := errgroup.WithContext(ctx)
	var ready atomic.Bool // after "textslash ready" is logged
	ln, err := serveHTTP(ctx, g, cfg, hostCheck(cfg, log, cfg.mux(parts, nc, js, &ready, log)))
	if err != nil {
		return err
	}
	if cfg.PprofAddr != "" {
		if err := servePprof(ctx, g, cfg, log); err != nil {
			return err
		}
	}
	for _, p := range parts {
		g.Go(func() error {
			err := p.run(ctx)
			if p.endsProcess && err == nil && ctx.Err() == nil {
				idleStop()
			}
			return err
		})
	}
	if awaitParts(ctx, parts) == nil {
		cfg.logReady(log, ln, parts, started)
		ready.Store(true)
	}
	return g.Wait()
}

// openStreams creates the streams, consumers and buckets (textslash
// serve), or waits for textslash provision to (a service of its own).
func (cfg *config) openStreams(ctx context.Context, js jetstream.JetStream, log zerolog.Logger) error {
	if !cfg.Provision {
		return waitStreams(ctx, js, cfg.streams(), log)
	}
	if err := bus.Provision(ctx, js, cfg.storage.options()); err != nil {
		return fmt.Errorf("%w (textslash serve creates the streams: its NATS user must be allowed to, as nats.conf's admin is)", err)
	}
	return nil
}

// mux routes this process's HTTP requests: each part's routes, the web
// chat behind its token, metrics and health.
func (cfg *config) mux(parts []part, nc *nats.Conn, js jetstream.JetStream, ready *atomic.Bool, log zerolog.Logger) *http.ServeMux {
	mux := http.NewServeMux()
	web := http.NewServeMux()
	for _, p := range parts {
		for route, h := range p.routes {
			mux.Handle(route, h)
		}
		for route, h := range p.web {
			web.Handle(route, h)
		}
	}
	if cfg.Web { // validated: ingress, which serves it, is here (and egress)
		mux.Handle("/", webAuth(*cfg, log, webOrigin(log, web)))
	}
	mux.Handle("GET /metrics", internalOnly(*cfg, promhttp.Handler()))
	if cfg.runs(Dispatcher) {
		registerQueueGauge(js)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.Handle("GET /readyz", internalOnly(*cfg, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ready.Load() {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		if nc.Status() != nats.CONNECTED {
			http.Error(w, "nats "+nc.Status().String(), http.StatusServiceUnavailable)
			return
		}
		for _, name := range cfg.streams() {
			if _, err := js.Stream(r.Context(), name); err != nil {
				http.Error(w, "stream "+name+": "+err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		fmt.Fprintln(w, "ready")
	})))
	return mux
}

// logReady says the process is ready, with where to reach it.
func (cfg *config) logReady(log zerolog.Logger, ln net.Listener, parts []part, started time.Time) {
	ev := log.Info().Strs("services", cfg.Services).Dur("cold_start_ms", time.Since(started))
	for _, p := range parts {
		if p.agent != "" {
			ev = ev.Str("agent", p.agent)
		}
	}
	if cfg.Web {
		url := "http://" + ln.Addr().String()
		if cfg.Host == "127.0.0.1" || cfg.Host == "localhost" {
			url = "http://localhost:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		}
		url += "/"
		if cfg.exposed() {
			// Required: the URL carries it. On loopback alone the chat opens
			// without it (<data>/web/token still marks the operator).
			url += "?token=" + cfg.WebToken
		}
		ev = ev.Str("web_chat", url)
	}
	if cfg.twilio() && cfg.runs(Ingress) {
		ev = ev.Str("twilio_webhook", cfg.PublicURL+"/webhook").Int("allowed_numbers", len(ingress.ParseList(cfg.Allowed)))
	}
	if cfg.NATSURL == "" && cfg.NATSListen != "off" {
		ev = ev.Str("nats", "nats://"+cfg.NATSListen)
	}
	if cfg.runsPlugins() && len(cfg.pluginsOn()) > 0 {
		ev = ev.Strs("plugin_channels", cfg.pluginsOn())
	}
	ev.Msg("textslash ready")
}

// webSecrets are the web chat's session key and its token
// (TEXTSLASH_WEB_TOKEN, else made once): kept in the data directory, so
// that sessions and the token's URL outlive a restart. Not exposed, the
// token is not required, but it still marks the operator (webAuth).
func webSecrets(cfg config) (contract.WebSessions, string, error) {
	key, err := secret(filepath.Join(cfg.Data, "web", "session.key"))
	if err != nil {
		return contract.WebSessions{}, "", fmt.Errorf("web chat: %w", err)
	}
	sessions, err := contract.NewWebSessions([]byte(key))
	if err != nil {
		return contract.WebSessions{}, "", err
	}
	token := cfg.WebToken
	if token == "" {
		if token, err = secret(filepath.Join(cfg.Data, "web", "token")); err != nil {
			return contract.WebSessions{}, "", fmt.Errorf("web chat: %w", err)
		}
	}
	return sessions, token, nil
}

// servePprof serves net/http/pprof's handlers on their own listener, apart
// from the public mux, until ctx ends.
func servePprof(ctx context.Context, g *errgroup.Group, cfg config, log zerolog.Logger) error {
	ln, err := net.Listen("tcp", cfg.PprofAddr)
	if err != nil {
		return fmt.Errorf("listen %s (TEXTSLASH_PPROF_ADDR): %w", cfg.PprofAddr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: hostCheck(cfg, log, mux), ReadHeaderTimeout: 10 * time.Second}
	log.Warn().Str("addr", "http://"+ln.Addr().String()+"/debug/pprof/").Msg("profiles served")
	g.Go(func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("pprof: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		<-ctx.Done()
		return srv.Close()
	})
	return nil
}

// registerQueueGauge reports, at each scrape, how many messages wait in
// users' queues (the QUEUE stream) and in IN for the dispatcher.
func registerQueueGauge(js jetstream.JetStream) {
	count := func(stream string) func() float64 {
		return func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			s, err := js.Stream(ctx, stream)
			if err != nil {
				return math.NaN()
			}
			info, err := s.Info(ctx)
			if err != nil {
				return math.NaN()
			}
			return float64(info.State.Msgs)
		}
	}
	prometheus.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "textslash_queued_messages",
			Help: "Messages waiting behind a user's current run (the QUEUE stream)."}, count(contract.StreamQueue)),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "textslash_inbound_messages",
			Help: "Messages in IN not yet routed and acknowledged by the dispatcher."}, count(contract.StreamIn)),
	)
}

// homeStats is the runner whose homes /metrics reports: the last made in
// this process (one, but in tests).
var (
	homeStats     atomic.Pointer[runner.Runner]
	homeGaugesSet sync.Once
)

// registerHomeGauges reports, at each scrape, the runner's homes: how
// many are warm, the memory they hold, and how many runs made a home
// (cold) or found one (warm).
func registerHomeGauges(r *runner.Runner) {
	homeStats.Store(r)
	stat := func(f func(sandbox.HomeStats) float64) func() float64 {
		return func() float64 { return f(homeStats.Load().HomeStats()) }
	}
	homeGaugesSet.Do(func() {
		prometheus.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "textslash_homes_warm",
				Help: "People's homes (sandboxes kept between runs) kept now."}, stat(func(s sandbox.HomeStats) float64 { return float64(s.Warm) })),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "textslash_homes_memory_bytes",
				Help: "Memory the processes of the warm homes hold."}, stat(func(s sandbox.HomeStats) float64 { return float64(s.Memory) })),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "textslash_home_starts_total",
				Help: "Runs that made their person's home (cold)."}, stat(func(s sandbox.HomeStats) float64 { return float64(s.Starts) })),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "textslash_home_reuses_total",
				Help: "Runs that found their person's home kept (warm)."}, stat(func(s sandbox.HomeStats) float64 { return float64(s.Reuse) })),
		)
	})
}
