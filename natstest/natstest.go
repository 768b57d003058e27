// Package natstest starts real embedded NATS servers with JetStream for
// tests, and holds the helpers every module's tests share: waiting for a
// condition (CheckFor) or that one holds (HoldsUntil), and skipping for
// want of a tool (Missing). It is imported by tests only.
package natstest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Server is a running embedded server and a client connected to it.
type Server struct {
	*server.Server
	NC *nats.Conn
	JS jetstream.JetStream

	logs *errorLog
}

// RunJetStream starts a JetStream server on a random loopback port with its
// store in t.TempDir, connects to it, and shuts both down when t ends.
func RunJetStream(t testing.TB) *Server {
	t.Helper()
	return run(t, &server.Options{
		ServerName: "natstest",
		JetStream:  true,
		NoLog:      true,
	})
}

// RunConfig starts a server from a nats-server configuration file (its
// variables read from the environment) on a random loopback port, with its
// store in t.TempDir and no monitoring port, and connects to it with
// opts (a user's credentials, say). Every line the server logs at error
// level is kept, for Errors.
func RunConfig(t testing.TB, file string, opts ...nats.Option) *Server {
	t.Helper()
	o, err := server.ProcessConfigFile(file)
	if err != nil {
		t.Fatalf("nats config %s: %v", file, err)
	}
	o.HTTPPort = 0
	return run(t, o, opts...)
}

func run(t testing.TB, o *server.Options, opts ...nats.Option) *Server {
	t.Helper()
	o.Host, o.Port = "127.0.0.1", -1
	o.StoreDir = t.TempDir()
	o.NoSigs = true
	ns, err := server.NewServer(o)
	if err != nil {
		t.Fatalf("new nats server: %v", err)
	}
	logs := &errorLog{}
	if !o.NoLog {
		ns.SetLoggerV2(logs, false, false, false)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready in 10s")
	}
	nc, err := nats.Connect(ns.ClientURL(), opts...)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("jetstream: %v", err)
	}
	t.Cleanup(func() {
		nc.Close()
		ns.Shutdown()
		ns.WaitForShutdown()
	})
	return &Server{Server: ns, NC: nc, JS: js, logs: logs}
}

// Errors returns what the server logged at error level so far (with
// RunConfig): a client refused for want of permission shows up here as
// `Publish Violation - Subject "…"` or `Subscription Violation - …`.
func (s *Server) Errors() []string { return s.logs.all() }

// errorLog keeps a server's error lines.
type errorLog struct {
	mu    sync.Mutex
	lines []string
}

// all is every line kept so far.
func (l *errorLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

func (l *errorLog) Errorf(format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, v...))
}
func (l *errorLog) Fatalf(format string, v ...any) { l.Errorf(format, v...) }
func (*errorLog) Noticef(string, ...any)           {}
func (*errorLog) Warnf(string, ...any)             {}
func (*errorLog) Debugf(string, ...any)            {}
func (*errorLog) Tracef(string, ...any)            {}

// CheckFor calls f until it returns nil or total passes, sleeping between
// calls; then it fails the test with f's last error.
func CheckFor(t testing.TB, total, sleep time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(total)
	var err error
	for time.Now().Before(deadline) {
		if err = f(); err == nil {
			return
		}
		time.Sleep(sleep)
	}
	t.Fatalf("not true after %v: %v", total, err)
}

// HoldsUntil calls f until deadline and fails the test as soon as it
// returns an error: how to wait for something that must not happen.
func HoldsUntil(t testing.TB, deadline time.Time, f func() error) {
	t.Helper()
	for {
		if err := f(); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
