// Package natstest starts real embedded NATS servers with JetStream for
// tests. It is imported by tests only.
package natstest

import (
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
}

// RunJetStream starts a JetStream server on a random loopback port with its
// store in t.TempDir, connects to it, and shuts both down when t ends.
func RunJetStream(t testing.TB) *Server {
	t.Helper()
	ns, err := server.NewServer(&server.Options{
		ServerName: "natstest",
		Host:       "127.0.0.1",
		Port:       -1,
		JetStream:  true,
		StoreDir:   t.TempDir(),
		NoSigs:     true,
		NoLog:      true,
	})
	if err != nil {
		t.Fatalf("new nats server: %v", err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready in 10s")
	}
	nc, err := nats.Connect(ns.ClientURL())
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
	return &Server{Server: ns, NC: nc, JS: js}
}

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
