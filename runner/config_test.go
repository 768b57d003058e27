package runner

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/configtest"
	"github.com/textslash/textslash/runner/memory"
	"github.com/textslash/textslash/runner/sandbox"
)

// badConfigs are configurations Validate refuses, with the settings
// (Config field paths) each refusal names.
var badConfigs = map[string]struct {
	cfg      Config
	settings []string
}{
	"negative concurrency":        {Config{Concurrency: -1}, []string{"Concurrency"}},
	"negative timeout":            {Config{Timeout: -time.Second}, []string{"Timeout"}},
	"timeout under 1s":            {Config{Timeout: 500 * time.Millisecond}, []string{"Timeout"}},
	"timeout past the dedup":      {Config{Timeout: 10 * time.Minute}, []string{"Timeout"}},
	"negative stop grace":         {Config{StopGrace: -time.Second}, []string{"StopGrace"}},
	"negative idle exit":          {Config{IdleExit: -time.Second}, []string{"IdleExit"}},
	"home idle too short":         {Config{HomeIdle: time.Millisecond}, []string{"HomeIdle"}},
	"permission timeout under 1s": {Config{PermissionTimeout: 10 * time.Millisecond}, []string{"PermissionTimeout"}},
	"negative permission timeout": {Config{PermissionTimeout: -time.Minute}, []string{"PermissionTimeout"}},
	"negative voice max":          {Config{VoiceMax: -time.Second}, []string{"VoiceMax"}},
	"negative voice grace":        {Config{VoiceGrace: -time.Second}, []string{"VoiceGrace"}},
	"negative project max":        {Config{ProjectMaxBytes: -1}, []string{"ProjectMaxBytes"}},
	"negative snapshot max":       {Config{SnapshotMax: -1}, []string{"SnapshotMax"}},
	"negative output cap":         {Config{OutputCap: -1}, []string{"OutputCap"}},
	"negative heartbeat":          {Config{Heartbeat: -time.Second}, []string{"Heartbeat"}},
	"heartbeat of a nanosecond":   {Config{Heartbeat: time.Nanosecond}, []string{"Heartbeat"}},
	"id with a space":             {Config{ID: "my runner"}, []string{"ID"}},
	"id with a dot":               {Config{ID: "host.example"}, []string{"ID"}},
	"pids under 16":               {Config{Sandbox: &sandbox.Sandbox{Limits: sandbox.Limits{Pids: 8}}}, []string{"Sandbox.Limits.Pids"}},
	"negative pids":               {Config{Sandbox: &sandbox.Sandbox{Limits: sandbox.Limits{Pids: -1}}}, []string{"Sandbox.Limits.Pids"}},
	"cpu under a tenth":           {Config{Sandbox: &sandbox.Sandbox{Limits: sandbox.Limits{CPU: 0.05}}}, []string{"Sandbox.Limits.CPU"}},
	"negative cpu":                {Config{Sandbox: &sandbox.Sandbox{Limits: sandbox.Limits{CPU: -1}}}, []string{"Sandbox.Limits.CPU"}},
	"negative memory":             {Config{Sandbox: &sandbox.Sandbox{Limits: sandbox.Limits{Memory: -1}}}, []string{"Sandbox.Limits.Memory"}},
	"disk quota under 32M":        {Config{DiskQuota: 1 << 20}, []string{"DiskQuota"}},
	"negative disk quota":         {Config{DiskQuota: -1}, []string{"DiskQuota"}},
	"preview URL without a *":     {Config{PreviewURL: "https://preview.example.com"}, []string{"PreviewURL"}},
	"preview URL of ftp":          {Config{PreviewURL: "ftp://*.preview.example.com"}, []string{"PreviewURL"}},
	"preview URL with * mid-host": {Config{PreviewURL: "https://a*.example.com"}, []string{"PreviewURL"}},
	"preview URL over the chat":   {Config{PreviewURL: "https://*.example.com", ChatURL: "https://chat.example.com"}, []string{"PreviewURL"}},
	"preview URL under the chat":  {Config{PreviewURL: "https://*.chat.example.com:8443", ChatURL: "https://Chat.example.com/"}, []string{"PreviewURL"}},
	"negative preview ttl":        {Config{PreviewTTL: -time.Minute}, []string{"PreviewTTL"}},
	"several at once": {Config{Concurrency: -2, Timeout: time.Hour, Sandbox: &sandbox.Sandbox{Limits: sandbox.Limits{Pids: 1, CPU: -1}}},
		[]string{"Concurrency", "Sandbox.Limits.CPU", "Sandbox.Limits.Pids", "Timeout"}},
}

// Validate, on Default's result, refuses each bad configuration with a
// ConfigError per bad setting.
func TestValidateRefusesBadConfig(t *testing.T) {
	for name, tc := range badConfigs {
		t.Run(name, func(t *testing.T) {
			err := tc.cfg.Default().Validate()
			if err == nil {
				t.Fatalf("Validate(%+v): got nil; want an error", tc.cfg.Default())
			}
			configtest.Refused(t, err, Config{}, tc.settings...)
		})
	}
}

// New refuses what Validate refuses, before it looks at the machine.
func TestNewRefusesBadConfig(t *testing.T) {
	e := newRunnerEnv(t)
	for name, tc := range badConfigs {
		t.Run(name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Agent, cfg.Workspaces = AgentShell, t.TempDir()
			r, err := New(cfg, e.js, zerolog.Nop())
			if err == nil {
				t.Fatalf("New(%+v): got %v, nil; want an error", cfg, r)
			}
			configtest.Refused(t, err, Config{}, tc.settings...)
		})
	}
}

// New's checks of the machine (the agent user, the workspaces, the
// sandbox, the credentials, the agent's binary) name the setting too.
func TestNewRefusesMachine(t *testing.T) {
	e := newRunnerEnv(t)
	sandboxWorks := func(t *testing.T) { skipUnlessSandbox(t) }
	tests := []struct {
		name    string
		cfg     func(t *testing.T) Config // Agent shell and Workspaces a new directory unless set
		setting string
		is      error  // what the error wraps too, if anything
		text    string // what its text says, if anything
	}{
		{name: "no such agent user", setting: "AgentUser", cfg: func(t *testing.T) Config {
			return Config{AgentUser: "textslash-no-such-user"}
		}},
		{name: "workspaces under a file", setting: "Workspaces", cfg: func(t *testing.T) Config {
			file := filepath.Join(t.TempDir(), "file")
			if err := os.WriteFile(file, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			return Config{Workspaces: filepath.Join(file, "workspaces")}
		}},
		{name: "no textslash command", setting: "ShotCommand", cfg: func(t *testing.T) Config {
			return Config{ShotCommand: filepath.Join(t.TempDir(), "textslash")}
		}},
		{name: "no claude binary there", setting: "ClaudeBin", cfg: func(t *testing.T) Config {
			return Config{Agent: AgentClaude, ClaudeBin: filepath.Join(t.TempDir(), "claude")}
		}},
		{name: "no claude in PATH", setting: "Agent", cfg: func(t *testing.T) Config {
			t.Setenv("PATH", t.TempDir())
			return Config{Agent: AgentClaude}
		}},
		{name: "agent command not found", setting: "Agent", text: "claud", cfg: func(t *testing.T) Config {
			return Config{Agent: "claud"}
		}},
		{name: "agent command not found, with arguments", setting: "Agent", text: "my-agent", cfg: func(t *testing.T) Config {
			return Config{Agent: "my-agent --fast"}
		}},
		{name: "agent command not executable", setting: "Agent", text: "agent.sh", cfg: func(t *testing.T) Config {
			bin := filepath.Join(t.TempDir(), "agent.sh")
			if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return Config{Agent: bin + " --fast"}
		}},
		{name: "claude as root", setting: "AgentUser", text: "root", cfg: func(t *testing.T) Config {
			if os.Geteuid() != 0 {
				t.Skip("not root")
			}
			return Config{Agent: AgentClaude, ClaudeBin: "/bin/true"}
		}},
		{name: "no bubblewrap", setting: "Sandbox", is: sandbox.ErrNoSandbox, text: "or run agents unconfined (no sandbox)", cfg: func(t *testing.T) Config {
			return Config{Sandbox: &sandbox.Sandbox{Bwrap: filepath.Join(t.TempDir(), "bwrap")}}
		}},
		{name: "no credentials directory", setting: "Credentials", cfg: func(t *testing.T) Config {
			sandboxWorks(t)
			return Config{Sandbox: &sandbox.Sandbox{}, Credentials: filepath.Join(t.TempDir(), "credentials")}
		}},
		{name: "credentials shared", setting: "Sandbox.Share", cfg: func(t *testing.T) Config {
			sandboxWorks(t)
			dir := t.TempDir()
			for _, d := range []string{dir, filepath.Dir(dir)} { // bwrap, as the runs' user, binds it
				if err := os.Chmod(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			return Config{Sandbox: &sandbox.Sandbox{Share: []string{dir}}, Credentials: filepath.Join(dir, "credentials")}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg(t)
			if cfg.Agent == "" {
				cfg.Agent = AgentShell
			}
			if cfg.Workspaces == "" {
				cfg.Workspaces = t.TempDir()
			}
			if cfg.Credentials != "" && tt.setting == "Sandbox.Share" {
				if err := os.Mkdir(cfg.Credentials, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			r, err := New(cfg, e.js, zerolog.Nop())
			if err == nil {
				t.Fatalf("New(%+v): got %v, nil; want an error", cfg, r)
			}
			configtest.Refused(t, err, Config{}, tt.setting)
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("err %q: got not %v; want errors.Is it", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.text) {
				t.Errorf("err %q: want it to say %q", err, tt.text)
			}
		})
	}
}

// The zero Config, filled in by Default, runs; so does one at the edges
// of every range, and settings set are kept.
func TestDefaultValidates(t *testing.T) {
	got := Config{}.Default()
	if err := got.Validate(); err != nil {
		t.Fatalf("Config{}.Default().Validate(): got %v; want nil", err)
	}
	want := Config{Workspaces: "workspaces", MemoryFree: DefaultMemoryFree(memory.Total()), Timeout: DefaultTimeout,
		PermissionTimeout: contract.PermissionTimeout, OutputCap: 10 << 20, Heartbeat: time.Minute,
		ShotAddr: "127.0.0.1:0", VoiceMax: DefaultVoiceMax, ProjectMaxBytes: DefaultProjectMaxBytes,
		SnapshotMax: DefaultSnapshotMax, HomeIdle: sandbox.DefaultHomeIdle, ID: DefaultID()}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Config{}.Default(): got %+v; want %+v", got, want)
	}
	set := Config{Agent: "bash", Workspaces: "/srv/ws", Concurrency: 1, MemoryFree: 1, Timeout: 9 * time.Minute,
		PermissionTimeout: time.Second, OutputCap: 1, Heartbeat: 10 * time.Millisecond, ShotAddr: "127.0.0.1:9999",
		StopGrace: time.Second, IdleExit: time.Second, VoiceMax: time.Second, VoiceGrace: time.Second,
		ProjectMaxBytes: 1, SnapshotMax: 1, HomesMax: 1, HomeIdle: time.Second, ID: "runner-1_a", Sandbox: &sandbox.Sandbox{Limits: sandbox.Limits{Memory: 1, Pids: 16, CPU: 0.1}}}
	got = set.Default()
	if got.Sandbox == set.Sandbox || !reflect.DeepEqual(*got.Sandbox, *set.Sandbox) {
		t.Errorf("Default's sandbox: got %p %+v; want a copy of %p %+v", got.Sandbox, got.Sandbox, set.Sandbox, set.Sandbox)
	}
	got.Sandbox = set.Sandbox
	if !reflect.DeepEqual(got, set) {
		t.Errorf("Default of a full config: got %+v; want it unchanged %+v", got, set)
	}
	if err := set.Default().Validate(); err != nil {
		t.Errorf("Validate(%+v): got %v; want nil", set, err)
	}
}

// Default returns a copy: the caller's Config, its Sandbox and the
// sandbox's lists stay as they were whatever is done with the copy.
func TestDefaultLeavesCaller(t *testing.T) {
	box := &sandbox.Sandbox{Hide: []string{"data"}, Share: []string{"cache"}}
	cfg := Config{Sandbox: box}
	got := cfg.Default()
	if cfg.Concurrency != 0 || cfg.Timeout != 0 || cfg.ID != "" || cfg.Sandbox != box {
		t.Errorf("after Default the caller's config is %+v; want it untouched", cfg)
	}
	got.Sandbox.Hide[0], got.Sandbox.Share[0], got.Sandbox.Bwrap = "/elsewhere", "/elsewhere", "/bin/bwrap"
	got.Sandbox.Limits.Pids = 99
	if want := (sandbox.Sandbox{Hide: []string{"data"}, Share: []string{"cache"}}); !reflect.DeepEqual(*box, want) {
		t.Errorf("after a change to Default's copy the caller's sandbox is %+v; want %+v", *box, want)
	}
}

// New readies its own copy of the sandbox: the caller's is left as it was
// (the binary, or a test, may hand the same one to another runner).
func TestNewLeavesCallersSandbox(t *testing.T) {
	skipUnlessSandbox(t)
	e := newRunnerEnv(t)
	creds := t.TempDir()
	box := &sandbox.Sandbox{Hide: []string{"data"}}
	if _, err := New(Config{Agent: AgentShell, Workspaces: e.workspaces, Sandbox: box, Credentials: creds}, e.js, zerolog.Nop()); err != nil {
		t.Fatalf("New: %v", err)
	}
	if want := (sandbox.Sandbox{Hide: []string{"data"}}); !reflect.DeepEqual(*box, want) {
		t.Errorf("after New the caller's sandbox is %+v; want %+v", *box, want)
	}
}

// skipUnlessSandbox skips a test of a sandboxed runner without an agent
// user where bubblewrap does not work for the user runs would be (nobody,
// as root).
func skipUnlessSandbox(t *testing.T) {
	t.Helper()
	var u *sandbox.User
	if os.Geteuid() == 0 {
		var err error
		if u, err = sandbox.LookupUser("nobody"); err != nil {
			t.Skip(err)
		}
	}
	if err := (&sandbox.Sandbox{}).Probe(u); err != nil {
		t.Skip(err)
	}
}

// A command line whose program New cannot judge (a relative path, run in
// the person's workspace; a builtin; shell syntax first) or finds is
// taken.
func TestNewTakesCommandLines(t *testing.T) {
	e := newRunnerEnv(t)
	for _, line := range []string{"cat", "bash -c 'echo hi'", "./agent.sh", "cd . && echo hi", "FOO=1 env",
		"exec cat", "{ echo hi; }", "'cat'", "/bin/cat -"} {
		t.Run(line, func(t *testing.T) {
			if _, err := New(Config{Agent: line, Workspaces: t.TempDir()}, e.js, zerolog.Nop()); err != nil {
				t.Errorf("New with agent %q: %v; want nil", line, err)
			}
		})
	}
}
