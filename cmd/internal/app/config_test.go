package app

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

// envMap is a lookupEnv over a map.
func envMap(m map[string]string) lookupEnv {
	return func(name string) (string, bool) { v, ok := m[name]; return v, ok }
}

// parseWith parses a serve (services nil) or single-service command line
// against env alone.
func parseWith(t *testing.T, services []string, env map[string]string, args ...string) (config, error) {
	t.Helper()
	env["TEXTSLASH_DATA"] = t.TempDir()
	var stderr bytes.Buffer
	return parseConfig("textslash serve", services, args, envMap(env), &stderr)
}

func TestConfigDefaults(t *testing.T) {
	t.Setenv("PORT", "1234") // the process's environment is not read
	c, err := parseWith(t, nil, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Port != 3000 || c.Host != "127.0.0.1" || !c.Web || c.Timeout != 300*time.Second || c.Concurrency != 0 || c.HomesMax != 0 ||
		c.IdleExit != 0 || c.Snapshots || c.MediaTTL != 30*time.Minute || c.Replicas != 1 || !c.Provision ||
		len(c.Services) != len(All) || c.Workspaces == "" || len(c.MediaKey) < 16 || c.RunCPU != 2 {
		t.Errorf("defaults: %+v", c)
	}
	c, err = parseWith(t, []string{Runner}, map[string]string{"NATS_URL": "nats://x:4222"})
	if err != nil {
		t.Fatal(err)
	}
	if c.IdleExit != 30*time.Minute || !c.Snapshots || c.Provision || c.Web {
		t.Errorf("the runner alone: idle exit %s, snapshots %v, provision %v, web %v; want 30m, on, off, off", c.IdleExit, c.Snapshots, c.Provision, c.Web)
	}
}

func TestConfigFlagOverEnvOverDefault(t *testing.T) {
	env := map[string]string{"PORT": "4000", "TEXTSLASH_TIMEOUT": "2m", "TEXTSLASH_RUN_CPU": "0.5",
		"TEXTSLASH_SHOW_COST": "true", "TEXTSLASH_BUDGET_DAILY": "3.5", "TEXTSLASH_NOTION_POLL": "1m"}
	c, err := parseWith(t, nil, env, "--port", "5000", "--no-web", "--twilio-status-callbacks=false")
	if err != nil {
		t.Fatal(err)
	}
	if c.Port != 5000 || c.Timeout != 2*time.Minute || c.RunCPU != 0.5 || !c.ShowCost || c.Web ||
		c.StatusCallbacks || c.dispatcherConfig().Budgets.Daily != 3.5 || c.Notion.Every != time.Minute {
		t.Errorf("got %+v", c)
	}
}

func TestConfigRejectsBadInput(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{env: map[string]string{"PORT": "x"}, want: `PORT="x"`},
		{env: map[string]string{"TEXTSLASH_TIMEOUT": "5"}, want: `TEXTSLASH_TIMEOUT="5"`},
		{env: map[string]string{"TEXTSLASH_WEB": "maybe"}, want: `TEXTSLASH_WEB="maybe"`},
		{env: map[string]string{"TEXTSLASH_TIMEOUT": "10m"}, want: "TEXTSLASH_TIMEOUT=10m: must be between 1s and 9m"},
		{env: map[string]string{"TEXTSLASH_PREVIEW_URL": "https://preview.example.com"}, want: `TEXTSLASH_PREVIEW_URL="https://preview.example.com": `},
		{env: map[string]string{"TEXTSLASH_PREVIEW_URL": "https://*.example.com", "PUBLIC_URL": "https://chat.example.com"}, want: `TEXTSLASH_PREVIEW_URL="https://*.example.com": `},
		{env: map[string]string{"TEXTSLASH_SERVICES": "ingress,bogus"}, want: `unknown service "bogus"`},
		{env: map[string]string{"TEXTSLASH_SERVICES": "ingress,egress", "TEXTSLASH_WEB": "true"}, want: "NATS_URL: required"},
		{env: map[string]string{"TEXTSLASH_SERVICES": "runner", "NATS_URL": "nats://x", "TEXTSLASH_WEB": "true"}, want: "the web chat needs ingress and egress"},
		{env: map[string]string{"TEXTSLASH_REPLICAS": "7"}, want: "TEXTSLASH_REPLICAS=7"},
		{env: map[string]string{"TEXTSLASH_RUN_MEMORY": "lots"}, want: "TEXTSLASH_RUN_MEMORY"},
		{env: map[string]string{"TWILIO_ACCOUNT_SID": "AC1"}, want: "TWILIO_AUTH_TOKEN: required for WhatsApp and SMS"},
		{args: []string{"--bogus"}, want: "unknown flag --bogus"},
		{args: []string{"extra"}, want: "unexpected argument extra"},
	} {
		if tc.env == nil {
			tc.env = map[string]string{}
		}
		_, err := parseWith(t, nil, tc.env, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %v: error %v; want one with %q", tc.env, tc.args, err, tc.want)
		}
	}
}

// twilio-go sends nothing with an auth token or account SID that is not
// letters and digits ("ApiError 21224: Invalid Password"): textslash says
// so at start, naming the variable.
func TestConfigRejectsATwilioTokenTwilioGoRefuses(t *testing.T) {
	twilio := func(sid, token string) map[string]string {
		return map[string]string{"TWILIO_ACCOUNT_SID": sid, "TWILIO_AUTH_TOKEN": token, "TWILIO_PHONE_NUMBER": "+15550001111",
			"PUBLIC_URL": "https://example.com", "ALLOWED_PHONE_NUMBERS": "+15550002222"}
	}
	good := strings.Repeat("a1", 16)
	if _, err := parseWith(t, nil, twilio("AC"+good, good)); err != nil {
		t.Fatalf("a good token: %v", err)
	}
	for _, tc := range []struct{ sid, token, want string }{
		{"AC" + good, good + "\n", "TWILIO_AUTH_TOKEN"},
		{"AC" + good, "my-secret-token!", "TWILIO_AUTH_TOKEN"},
		{"AC-" + good, good, "TWILIO_ACCOUNT_SID"},
	} {
		_, err := parseWith(t, nil, twilio(tc.sid, tc.token))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("sid %q token %q: error %v; want one naming %s", tc.sid, tc.token, err, tc.want)
		}
	}
}

func TestConfigHelpNamesEveryVariable(t *testing.T) {
	var stderr bytes.Buffer
	_, err := parseConfig("textslash serve", nil, []string{"--help"}, envMap(map[string]string{}), &stderr)
	if !errors.Is(err, errHelp) {
		t.Fatalf("--help: %v", err)
	}
	for _, v := range []string{"$TEXTSLASH_SERVICES", "$PORT", "$NATS_URL", "$TWILIO_AUTH_TOKEN", "$NOTION_TOKEN", "$TEXTSLASH_MEDIA_TTL", "Usage: textslash serve"} {
		if !strings.Contains(stderr.String(), v) {
			t.Errorf("--help does not name %s", v)
		}
	}
	// Defaults read as a person writes them, and as the flag takes them.
	for _, v := range []string{"--media-ttl=30m ", "--timeout=5m ", "--approval-timeout=30m "} {
		if !strings.Contains(stderr.String(), v) {
			t.Errorf("--help does not say %s", v)
		}
	}
	stderr.Reset()
	_, err = parseConfig("runner", []string{Runner}, []string{"--help"}, envMap(map[string]string{}), &stderr)
	if !errors.Is(err, errHelp) || strings.Contains(stderr.String(), "--services") || !strings.Contains(stderr.String(), "$TEXTSLASH_CONCURRENCY") {
		t.Errorf("runner --help (%v):\n%s", err, stderr.String())
	}
}

// Every bad setting is reported at start, not the first alone: a person
// fixing TEXTSLASH_TIMEOUT should not restart to learn of the next.
func TestConfigReportsEveryBadSettingAtOnce(t *testing.T) {
	env := map[string]string{"TEXTSLASH_TIMEOUT": "5", "PORT": "x", "TEXTSLASH_DEFAULT_MODE": "bogus",
		"TEXTSLASH_REPLICAS": "7", "TEXTSLASH_LOG_FORMAT": "loud", "TEXTSLASH_CONCURRENCY": "-1"}
	_, err := parseWith(t, nil, env)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`TEXTSLASH_TIMEOUT="5"`, `PORT="x"`, "TEXTSLASH_DEFAULT_MODE", "TEXTSLASH_REPLICAS=7",
		`TEXTSLASH_LOG_FORMAT="loud"`, "TEXTSLASH_CONCURRENCY=-1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s:\n%v", want, err)
		}
	}
}
