package app

import (
	"context"
	"net/http"
	"os"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/dispatcher"
	"github.com/textslash/textslash/egress"
	"github.com/textslash/textslash/ingress"
	"github.com/textslash/textslash/media"
	"github.com/textslash/textslash/runner"
)

// part is one service of this process: its Run, and what it serves over
// HTTP.
type part struct {
	run func(context.Context) error
	// routes are served as they are; web only with the web chat, behind
	// its token.
	routes, web map[string]http.Handler
	// endsProcess: the process ends when run returns without an error (a
	// runner idle for TEXTSLASH_IDLE_EXIT).
	endsProcess bool
	agent       string // the runner's agent, for the log
	// ready is closed once run is ready (nil: as soon as it runs); the
	// process says it is ready, and /readyz too, once every part is.
	ready <-chan struct{}
}

// awaitParts returns once every part is ready, or ctx's error once it
// ends first (a part failed: its error ends the errgroup's ctx).
func awaitParts(ctx context.Context, parts []part) error {
	for _, p := range parts {
		if p.ready == nil {
			continue
		}
		select {
		case <-p.ready:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// partEnv is what the parts of one process share.
type partEnv struct {
	js       jetstream.JetStream
	log      zerolog.Logger
	signer   contract.MediaSigner
	sessions contract.WebSessions
}

// makeParts makes each service's part from the configuration.
var makeParts = map[string]func(context.Context, *config, partEnv) (part, error){
	Ingress: func(ctx context.Context, cfg *config, env partEnv) (part, error) {
		ic := cfg.ingressConfig()
		chs, err := cfg.builtins(ctx, env, true)
		if err != nil {
			return part{}, err
		}
		ic.Channels = chs
		in, err := ingress.New(ic, env.js, env.log)
		if err != nil {
			return part{}, err
		}
		p := part{run: in.Run, routes: map[string]http.Handler{}, web: map[string]http.Handler{}}
		for _, route := range in.Routes() {
			p.routes[route] = in.Handler()
		}
		if pages := in.Pages(); pages != nil {
			p.web["/"] = pages
		}
		return p, nil
	},
	Dispatcher: func(_ context.Context, cfg *config, env partEnv) (part, error) {
		disp, err := dispatcher.New(cfg.dispatcherConfig(), env.js, env.log)
		if err != nil {
			return part{}, err
		}
		cfg.warnAdmins(env.log)
		return part{run: disp.Run}, nil
	},
	Runner: func(_ context.Context, cfg *config, env partEnv) (part, error) {
		self, err := os.Executable()
		if err != nil {
			env.log.Warn().Err(err).Msg("own binary not found: agents cannot run textslash shot (curl $TEXTSLASH_SHOT_URL still works)")
		}
		rc := cfg.runnerConfig()
		rc.ShotCommand = self
		run, err := runner.New(rc, env.js, env.log)
		if err != nil {
			return part{}, err
		}
		env.log.Info().Str("agent", run.AgentName()).Msg(agentLine(cfg.Agent, run.AgentName(), run.ClaudeBin(), cfg.AgentUser))
		registerHomeGauges(run)
		return part{run: run.Run, endsProcess: true, agent: run.AgentName(), ready: run.Ready()}, nil
	},
	Media: func(ctx context.Context, cfg *config, env partEnv) (part, error) {
		mc := cfg.mediaConfig()
		mc.Signer = env.signer
		med, err := media.New(mc, env.js, env.log)
		if err == nil {
			err = med.Open(ctx)
		}
		if err != nil {
			return part{}, err
		}
		return part{run: med.Run, routes: map[string]http.Handler{"/images/": med.Handler(), "/files/": med.Handler()}}, nil
	},
	Egress: func(ctx context.Context, cfg *config, env partEnv) (part, error) {
		ec := cfg.egressConfig()
		ec.Signer = env.signer
		chs, err := cfg.builtins(ctx, env, false)
		if err != nil {
			return part{}, err
		}
		ec.Channels = chs
		out, err := egress.New(ec, env.js, env.log)
		if err != nil {
			return part{}, err
		}
		return part{run: out.Run}, nil
	},
}
