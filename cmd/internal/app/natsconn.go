package app

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
)

// This file is textslash's connection to NATS: to NATS_URL, or to the
// server it embeds (its users in natsauth.go).

// natsOptions are the options of a connection named name to NATS_URL: it
// reconnects for ever, and logged in as NATS_USER it takes that user's
// inboxes (nats.conf lets each user read only its own).
func natsOptions(cfg config, name string) []nats.Option {
	opts := []nats.Option{nats.Name(name), nats.MaxReconnects(-1)}
	if cfg.NATSUser != "" {
		opts = append(opts, nats.UserInfo(cfg.NATSUser, cfg.NATSPass), nats.CustomInboxPrefix(InboxPrefix(cfg.NATSUser)))
	}
	return opts
}

// connectNATS connects to NATS_URL, or starts the embedded server and
// connects in-process. The returned func drains the connection and stops
// the server.
func connectNATS(cfg config, log zerolog.Logger) (*nats.Conn, func(), error) {
	opts := natsOptions(cfg, "textslash "+strings.Join(cfg.Services, ","))
	if cfg.NATSURL != "" {
		nc, err := nats.Connect(cfg.NATSURL, opts...)
		if err != nil {
			return nil, nil, fmt.Errorf("connect NATS_URL: %w", err)
		}
		log.Info().Str("url", nc.ConnectedUrlRedacted()).Msg("connected to NATS")
		return nc, drain(nc), nil
	}
	sopts := &server.Options{
		ServerName: "textslash",
		JetStream:  true,
		StoreDir:   filepath.Join(cfg.Data, "jetstream"),
		SyncAlways: cfg.NATSSync,
		NoSigs:     true,
	}
	var loginDir string // where the nats CLI's logins are kept, when it can connect
	if cfg.NATSListen == "off" {
		sopts.DontListen = true
	} else {
		host, port, _ := net.SplitHostPort(cfg.NATSListen)
		sopts.Host = host
		sopts.Port, _ = strconv.Atoi(port)
		loginDir = filepath.Join(cfg.Data, "nats")
	}
	logins, err := loadNATSLogins(loginDir, cfg.Channels)
	if err == nil {
		sopts.Users, err = logins.users()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("embedded NATS logins: %w", err)
	}
	ns, err := server.NewServer(sopts)
	if err != nil {
		return nil, nil, fmt.Errorf("embedded NATS: %w", err)
	}
	fatal := make(chan string, 1)
	ns.SetLoggerV2(natsLogger{log.With().Str("svc", "nats").Logger(), fatal}, false, false, false)
	go ns.Start()
	if err := natsReady(ns, fatal); err != nil {
		ns.Shutdown()
		return nil, nil, fmt.Errorf("embedded NATS: %w (TEXTSLASH_NATS_LISTEN=%s)", err, cfg.NATSListen)
	}
	if logins.dir != "" {
		if err := logins.write(ns.Addr()); err != nil {
			ns.Shutdown()
			return nil, nil, fmt.Errorf("embedded NATS logins: %w", err)
		}
		log.Info().Str("nats_logins", logins.dir).Strs("channel_logins", logins.channels).
			Msg("embedded NATS takes logins only: tap.env (reads ts.>) and admin.env (everything) in nats_logins, for the nats CLI (scripts/nats); channel-<name>.env for each plug-in channel of TEXTSLASH_CHANNELS (a channel's rights alone)")
	}
	nc, err := nats.Connect("", append(opts, nats.InProcessServer(ns), logins.login())...)
	if err != nil {
		ns.Shutdown()
		return nil, nil, fmt.Errorf("connect embedded NATS: %w", err)
	}
	return nc, func() {
		drain(nc)()
		ns.Shutdown()
		ns.WaitForShutdown()
	}, nil
}

// natsReady waits until ns takes connections. An error the server meets
// starting (its port taken, say) it logs as fatal and stops trying, so
// that ends the wait at once: ReadyForConnections would wait out its time.
func natsReady(ns *server.Server, fatal <-chan string) error {
	deadline := time.Now().Add(30 * time.Second)
	for !ns.ReadyForConnections(25 * time.Millisecond) {
		select {
		case msg := <-fatal:
			return errors.New(msg)
		default:
		}
		if time.Now().After(deadline) {
			return errors.New("not ready in 30s")
		}
	}
	return nil
}

func drain(nc *nats.Conn) func() {
	return func() {
		closed := make(chan struct{})
		nc.SetClosedHandler(func(*nats.Conn) { close(closed) })
		if err := nc.Drain(); err != nil {
			nc.Close()
			return
		}
		select {
		case <-closed:
		case <-time.After(5 * time.Second):
			nc.Close()
		}
	}
}

// natsLogger sends the embedded server's log to zerolog; its chatty notices
// go to debug. The first fatal error goes to fatal too, when there is room.
type natsLogger struct {
	l     zerolog.Logger
	fatal chan<- string
}

func (n natsLogger) Noticef(format string, v ...any) { n.l.Debug().Msgf(format, v...) }
func (n natsLogger) Warnf(format string, v ...any)   { n.l.Warn().Msgf(format, v...) }
func (n natsLogger) Errorf(format string, v ...any)  { n.l.Error().Msgf(format, v...) }
func (n natsLogger) Debugf(format string, v ...any)  { n.l.Trace().Msgf(format, v...) }
func (n natsLogger) Tracef(format string, v ...any)  { n.l.Trace().Msgf(format, v...) }

func (n natsLogger) Fatalf(format string, v ...any) {
	n.l.Error().Msgf(format, v...)
	select {
	case n.fatal <- fmt.Sprintf(format, v...):
	default:
	}
}
