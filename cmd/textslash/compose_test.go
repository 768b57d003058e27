package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/textslash/textslash/channels/slack/slacktest"
	"github.com/textslash/textslash/cmd/internal/app"
	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/runner/claudetest"
)

// composeFile is the part of compose.yaml the test checks.
type composeFile struct {
	Services map[string]struct {
		Build       struct{ Target string } `yaml:"build"`
		Command     []string                `yaml:"command"`
		Environment map[string]string       `yaml:"environment"`
		Healthcheck struct{ Test []string } `yaml:"healthcheck"`
		User        string                  `yaml:"user"`
		CapAdd      []string                `yaml:"cap_add"`
		Privileged  bool                    `yaml:"privileged"`
		SecurityOpt []string                `yaml:"security_opt"`
		Devices     []string                `yaml:"devices"`
		Ports       []string                `yaml:"ports"`
	} `yaml:"services"`
	Configs map[string]struct {
		Content string `yaml:"content"`
	} `yaml:"configs"`
}

// readVars lists the environment variables a service's --help names.
func readVars(t *testing.T, service string) []string {
	t.Helper()
	return helpVars(t, filepath.Join(buildServices(t), service))
}

// helpVars lists the environment variables a binary's --help names.
func helpVars(t *testing.T, bin string) []string {
	t.Helper()
	out, _ := exec.Command(bin, "--help").CombinedOutput()
	var vars []string
	for _, m := range regexp.MustCompile(`\(\$([A-Z_]+)\)(?: \(default .*\))?\n`).FindAllSubmatch(out, -1) {
		vars = append(vars, string(m[1]))
	}
	if len(vars) < 30 {
		t.Fatalf("%s --help names %d variables:\n%s", bin, len(vars), out)
	}
	return vars
}

// agentVar is a variable the runner passes to agents rather than reads:
// Claude Code's, and the keys of the agents over the Agent Client Protocol.
func agentVar(name string) bool {
	for _, p := range []string{"ANTHROPIC_", "CLAUDE_CODE_", "GEMINI_", "OPENAI_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// compose.yaml runs each service's binary from an image the Dockerfile
// builds, with a healthcheck the binary answers, and sets only variables
// the service reads; textslash.env.example lists every variable and
// nothing else. Each service connects as its own NATS user with the
// password of .env that nats.conf gives it, after the provision job. With
// compose.yaml's and textslash.env.example's settings each service starts
// and is ready (against the test's NATS, run from nats.conf).
func TestComposeFile(t *testing.T) {
	data, err := os.ReadFile("../../compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(data, &cf); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	dockerfile, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	checkComposeNATS(t, cf)
	example := readEnvExample(t, "../../textslash.env.example")
	checkComposeSecrets(t, cf, example)
	checkComposeHomes(t, cf, string(dockerfile))
	ns := runNATSUsers(t)
	for _, name := range app.All {
		t.Run(name, func(t *testing.T) {
			svc, ok := cf.Services[name]
			if !ok {
				t.Fatalf("compose.yaml has no service %s", name)
			}
			vars := readVars(t, name)
			if !slices.Equal(svc.Command, []string{name}) {
				t.Errorf("command %q; want [%s]", svc.Command, name)
			}
			if want := []string{"CMD", name, "healthcheck"}; !slices.Equal(svc.Healthcheck.Test, want) {
				t.Errorf("healthcheck %q; want %q", svc.Healthcheck.Test, want)
			}
			if !regexp.MustCompile(`(?m)^FROM .* AS ` + regexp.QuoteMeta(svc.Build.Target) + `$`).Match(dockerfile) {
				t.Errorf("build target %q is not a stage of the Dockerfile", svc.Build.Target)
			}
			if svc.Environment["NATS_URL"] == "" {
				t.Error("no NATS_URL")
			}
			if svc.Environment["NATS_USER"] != name || svc.Environment["NATS_PASSWORD"] != passwordOf(name) {
				t.Errorf("NATS_USER %q, NATS_PASSWORD %q; want %s and %s",
					svc.Environment["NATS_USER"], svc.Environment["NATS_PASSWORD"], name, passwordOf(name))
			}
			for k := range svc.Environment {
				if !slices.Contains(vars, k) && !agentVar(k) {
					t.Errorf("environment sets %s, which %s does not read", k, name)
				}
			}
			for k := range example.set {
				if !slices.Contains(vars, k) && !agentVar(k) {
					t.Errorf("textslash.env.example sets %s, which %s does not read", k, name)
				}
			}
			for _, v := range vars {
				if !example.named[v] {
					t.Errorf("textslash.env.example does not name %s", v)
				}
			}

			// Start it as compose would, on this machine's paths.
			env := ns.env(name)
			for k, v := range example.set {
				env = append(env, k+"="+v)
			}
			for k, v := range svc.Environment {
				if strings.HasPrefix(v, "${") && k != "NATS_PASSWORD" {
					// A secret from .env, as a deployment fills it in.
					if v = testSecrets[k]; v == "" {
						continue
					}
				}
				switch k {
				case "NATS_URL", "NATS_USER", "NATS_PASSWORD", "PORT", "TEXTSLASH_DATA":
				case "TEXTSLASH_CHROMIUM", "TEXTSLASH_AGENT":
					// the image's browser and agent: checked to exist where
					// this machine has them
					if k == "TEXTSLASH_AGENT" && v == "claude" {
						env = append(env, k+"="+v, "TEXTSLASH_CLAUDE_BIN="+claudetest.Binary(t))
						if u := claudetest.AgentUser(t); u != "" {
							env = append(env, "TEXTSLASH_AGENT_USER="+u)
						}
					}
				default:
					env = append(env, k+"="+v)
				}
			}
			if name != "runner" {
				startService(t, name, env...)
				return
			}
			// The runner as compose runs it: as an unprivileged user, whose
			// runs are its own. It keeps homes, with a network of their own.
			u := claudetest.AgentUser(t)
			if u == "" {
				t.Skip("needs root, to run the runner as an unprivileged user")
			}
			env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "TEXTSLASH_AGENT_USER=") })
			env = append(env, "TEXTSLASH_PREVIEW_ADDR=127.0.0.1:0") // compose's is the container's own
			runner := startServiceAs(t, name, u, env...)
			// Ready is logged before the runner's own start-up lines:
			// wait for them.
			natstest.CheckFor(t, 15*time.Second, 20*time.Millisecond, func() error {
				for _, said := range []string{"homes kept", "homes have a network of their own", `"sandbox: OFF here: limits`} {
					if len(logLines(t, runner, said)) == 0 {
						return fmt.Errorf("the runner as compose runs it (as %s) did not log %q", u, said)
					}
				}
				return nil
			})
		})
	}
	t.Run("slack", func(t *testing.T) { checkComposeSlack(t, cf, example, ns) })
	if v := ns.violations(); len(v) > 0 {
		t.Errorf("NATS refused the services %d times:\n%s", len(v), strings.Join(v, "\n"))
	}
}

// checkComposeHomes: the runner container gives homes what they need and
// nothing more (compose.yaml's runner comments say why): not root, no
// capability added, not privileged; user namespaces and a /proc of a
// sandbox's own allowed (seccomp, AppArmor, systempaths unconfined);
// /dev/net/tun for slirp4netns, which the runner image installs with
// bubblewrap; and the preview links' port published by the proxy, which
// routes it to the runner.
func checkComposeHomes(t *testing.T, cf composeFile, dockerfile string) {
	t.Helper()
	r := cf.Services["runner"]
	if r.User != "" || len(r.CapAdd) > 0 || r.Privileged {
		t.Errorf("runner: user %q, cap_add %q, privileged %v; want none (the Dockerfile's unprivileged user)", r.User, r.CapAdd, r.Privileged)
	}
	stage := dockerfile[strings.Index(dockerfile, "AS runner"):]
	if i := strings.Index(stage[1:], "\nFROM "); i >= 0 {
		stage = stage[:i+1]
	}
	for _, want := range []string{"bubblewrap", "slirp4netns", "\nUSER textslash"} {
		if !strings.Contains(stage, want) {
			t.Errorf("the Dockerfile's runner stage has no %q", want)
		}
	}
	for _, want := range []string{"seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined"} {
		if !slices.Contains(r.SecurityOpt, want) {
			t.Errorf("runner security_opt %q; want %s (homes' user namespaces, a sandbox's own /proc)", r.SecurityOpt, want)
		}
	}
	if !slices.ContainsFunc(r.Devices, func(d string) bool { return strings.HasPrefix(d, "/dev/net/tun") }) {
		t.Errorf("runner devices %q; want /dev/net/tun (a home's network)", r.Devices)
	}
	addr := r.Environment["TEXTSLASH_PREVIEW_ADDR"]
	_, port, _ := strings.Cut(addr, ":")
	if !strings.HasPrefix(addr, "0.0.0.0:") || port == "" {
		t.Fatalf("runner TEXTSLASH_PREVIEW_ADDR %q; want 0.0.0.0:<port>, for the proxy to reach", addr)
	}
	if caddy := cf.Configs["caddyfile"].Content; !regexp.MustCompile(`(?s):` + port + ` \{\s*reverse_proxy runner:` + port + `\s*\}`).MatchString(caddy) {
		t.Errorf("the proxy's Caddyfile does not route :%s to runner:%s:\n%s", port, port, caddy)
	}
	if p := cf.Services["proxy"].Ports; !slices.Contains(p, port+":"+port) {
		t.Errorf("proxy ports %q; want %s:%s (the preview links' default port)", p, port, port)
	}
}

// passwordOf is how compose.yaml gives a NATS user its password: from
// compose's .env, which must set it.
func passwordOf(user string) string {
	return "${" + passwordVar(user) + ":?set in .env}"
}

// checkComposeNATS: the nats service runs nats.conf with every password
// it names, .env.example names exactly those, and the provision job runs
// as admin before the services.
func checkComposeNATS(t *testing.T, cf composeFile) {
	t.Helper()
	users := natsConfUsers(t)
	want := append([]string{"admin"}, app.All...)
	if len(users) < len(want) || !slices.Equal(users[:len(want)], want) {
		t.Errorf("nats.conf users %q; want %q first", users, want)
	}
	for _, u := range users[min(len(want), len(users)):] {
		if !strings.HasPrefix(u, "channel-") {
			t.Errorf("nats.conf user %s after the services'; want only plug-in channels' (channel-<name>)", u)
		}
	}
	nats := cf.Services["nats"]
	if !slices.Equal(nats.Command, []string{"--config", "/etc/nats/nats.conf"}) {
		t.Errorf("nats command %q; want nats.conf", nats.Command)
	}
	dotenv := readEnvExample(t, "../../.env.example")
	for _, u := range users {
		name := passwordVar(u)
		if nats.Environment[name] != passwordOf(u) {
			t.Errorf("nats environment %s=%q; want %q", name, nats.Environment[name], passwordOf(u))
		}
		if _, ok := dotenv.set[name]; !ok {
			t.Errorf(".env.example does not set %s", name)
		}
	}
	for name := range secretUsers {
		if _, ok := dotenv.set[name]; !ok {
			t.Errorf(".env.example does not set %s", name)
		}
	}
	if len(dotenv.set) != len(users)+len(secretUsers) {
		t.Errorf(".env.example sets %d variables; want the %d passwords and the %d secrets", len(dotenv.set), len(users), len(secretUsers))
	}
	prov := cf.Services["provision"]
	if !slices.Equal(prov.Command, []string{"textslash", "provision"}) || prov.Environment["NATS_USER"] != "admin" ||
		prov.Environment["NATS_PASSWORD"] != passwordOf("admin") {
		t.Errorf("provision runs %q as %q; want textslash provision as admin", prov.Command, prov.Environment["NATS_USER"])
	}
}

// secretUsers are the secrets of .env and the services compose hands each
// to: never the shared textslash.env, which every service reads (the
// runner, whose agents run what people send, included).
var secretUsers = map[string][]string{
	"TWILIO_AUTH_TOKEN":       {app.Ingress, app.Egress},
	"TELEGRAM_BOT_TOKEN":      {app.Ingress, app.Egress},
	"TELEGRAM_WEBHOOK_SECRET": {app.Ingress},
	"DISCORD_BOT_TOKEN":       {"discord"},
	"NOTION_TOKEN":            {app.Ingress, app.Egress},
	"TEXTSLASH_MEDIA_KEY":     {app.Media, app.Egress},
	"ANTHROPIC_API_KEY":       {app.Runner},
	"SLACK_BOT_TOKEN":         {"slack"},
	"SLACK_APP_TOKEN":         {"slack"},
	"SLACK_SIGNING_SECRET":    {"slack"},
}

// testSecrets fill in compose's ${...} of .env when the test starts the
// services; the others stay empty (their provider off).
var testSecrets = map[string]string{"TEXTSLASH_MEDIA_KEY": "a-media-key-for-the-compose-test"}

// checkComposeSecrets: each secret reaches only its services, and
// textslash.env.example sets none.
func checkComposeSecrets(t *testing.T, cf composeFile, example envExample) {
	t.Helper()
	for name, users := range secretUsers {
		if _, ok := example.set[name]; ok {
			t.Errorf("textslash.env.example sets the secret %s, which every service would read", name)
		}
		for svc, def := range cf.Services {
			v, has := def.Environment[name]
			if want := slices.Contains(users, svc); has != want {
				t.Errorf("compose.yaml hands %s to %s: %v; want %v", name, svc, has, want)
			} else if has && !strings.HasPrefix(v, "${"+name+":") {
				t.Errorf("compose.yaml sets %s of %s to %q; want it from .env", name, svc, v)
			}
		}
	}
}

type envExample struct {
	set   map[string]string // uncommented NAME=value lines
	named map[string]bool   // every NAME= line, commented or not
}

func readEnvExample(t *testing.T, path string) envExample {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	e := envExample{set: map[string]string{}, named: map[string]bool{}}
	line := regexp.MustCompile(`^(# )?([A-Z][A-Z0-9_]*)=(.*)$`)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		e.named[m[2]] = true
		if m[1] == "" {
			e.set[m[2]] = m[3]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return e
}

// checkComposeSlack: compose.yaml's slack service runs cmd/slack as
// nats.conf's channel-slack user with variables it reads; so started
// (against the fake Slack), it takes a person's message into IN with
// nothing more than that login.
func checkComposeSlack(t *testing.T, cf composeFile, example envExample, ns *natsUsers) {
	svc, ok := cf.Services["slack"]
	if !ok {
		t.Fatal("compose.yaml has no service slack")
	}
	bin, err := slackBinary()
	if err != nil {
		t.Fatal(err)
	}
	vars := helpVars(t, bin)
	if !slices.Equal(svc.Command, []string{"slack"}) || !slices.Equal(svc.Healthcheck.Test, []string{"CMD", "slack", "healthcheck"}) {
		t.Errorf("command %q, healthcheck %q; want slack and its healthcheck", svc.Command, svc.Healthcheck.Test)
	}
	if svc.Environment["NATS_USER"] != "channel-slack" || svc.Environment["NATS_PASSWORD"] != passwordOf("channel-slack") {
		t.Errorf("NATS_USER %q, NATS_PASSWORD %q; want channel-slack and its password", svc.Environment["NATS_USER"], svc.Environment["NATS_PASSWORD"])
	}
	for k := range svc.Environment {
		if !slices.Contains(vars, k) {
			t.Errorf("environment sets %s, which slack does not read", k)
		}
	}
	for _, v := range vars {
		if !example.named[v] {
			t.Errorf("textslash.env.example does not name %s", v)
		}
	}
	fake := slacktest.New(t)
	env := append(ns.env("channel-slack"), slackEnv(fake)...)
	for k, v := range example.set {
		env = append(env, k+"="+v)
	}
	startProgram(t, []string{bin}, env...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := fake.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	(&slackPerson{fake: fake, user: slackAlice}).say(t, "hello")
	admin, _ := ns.connect(t, "admin")
	stream, err := admin.Stream(ctx, contract.StreamIn)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := stream.GetLastMsgForSubject(ctx, "ts.in.slack."+slackAlice); err != nil || !strings.Contains(string(m.Data), `"hello"`) {
		t.Errorf("IN's last message of slack.%s: %v; want hello", slackAlice, err)
	}
}
