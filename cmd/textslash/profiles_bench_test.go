package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// benchProfiles fetches textslash's profiles (its TEXTSLASH_PPROF_ADDR)
// into the directory $TEXTSLASH_BENCH_PROFILES names; with that unset it
// does nothing.
type benchProfiles struct {
	b    *testing.B
	dir  string
	addr string // host:port of textslash's /debug/pprof; "" when off
}

// newBenchProfiles returns the profiler and the environment to start
// textslash with (nothing when profiles are off).
func newBenchProfiles(b *testing.B) (*benchProfiles, []string) {
	p := &benchProfiles{b: b, dir: os.Getenv("TEXTSLASH_BENCH_PROFILES")}
	if p.dir == "" {
		return p, nil
	}
	p.addr = "127.0.0.1:" + freePort(b)
	return p, []string{"TEXTSLASH_PPROF_ADDR=" + p.addr}
}

func (p *benchProfiles) on() bool { return p.addr != "" }

// save writes textslash's profile at path (under /debug/pprof) to the file
// name in the directory.
func (p *benchProfiles) save(name, path string) {
	if !p.on() {
		return
	}
	resp, err := http.Get("http://" + p.addr + "/debug/pprof/" + path)
	if err != nil {
		p.b.Logf("profile %s: %v", name, err)
		return
	}
	defer resp.Body.Close()
	f, err := os.Create(filepath.Join(p.dir, name))
	if err != nil {
		p.b.Logf("profile %s: %v", name, err)
		return
	}
	defer f.Close()
	_, _ = io.Copy(f, resp.Body)
}

// start does save in the background: a CPU profile of some seconds.
func (p *benchProfiles) start(name, path string) { go p.save(name, path) }
