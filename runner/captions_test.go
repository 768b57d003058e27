package runner

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/runner/claudetest"
	"github.com/textslash/textslash/runner/internal/testkit"
)

// claudeTimeout bounds one CLI run so a hung CLI can't hang the suite.
const claudeTimeout = 90 * time.Second

// startAgent runs a Runner with cfg (Workspaces filled in) until the test
// ends, logging to logs when set.
func (e *runnerEnv) startAgent(cfg Config, logs *natstest.Logs) *Runner {
	e.t.Helper()
	cfg.Workspaces = e.workspaces
	log := zerolog.New(zerolog.NewTestWriter(e.t)).Level(zerolog.ErrorLevel)
	if logs != nil {
		log = zerolog.New(logs)
	}
	r, err := New(cfg, e.js, log)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	go func() { ended <- r.Run(ctx) }()
	e.t.Cleanup(func() {
		cancel()
		select {
		case <-ended:
		case <-time.After(30 * time.Second):
			e.t.Error("Run did not return")
		}
	})
	return r
}

// imageEvents are the image events of job id, in order.
func (e *runnerEnv) imageEvents(u contract.User, id string) []contract.Event {
	e.t.Helper()
	var out []contract.Event
	for _, ev := range e.events(u, contract.KindImage) {
		if ev.JobID == id {
			out = append(out, ev)
		}
	}
	return out
}

// captions lists the images' captions.
func captions(images []contract.Image) []string {
	var out []string
	for _, img := range images {
		out = append(out, img.Caption)
	}
	return out
}

// pngScript writes the test PNG at path in a command agent's workspace.
func pngScript(t *testing.T, path string) string {
	return "mkdir -p \"$(dirname " + path + ")\" && echo " + base64.StdEncoding.EncodeToString(testkit.PNG(t)) + " | base64 -d > " + path
}

// Every agent's captioned images come with the reply, each with its
// caption, on its image event and in the done event (a screenshot's
// without one); a path outside the workspace is refused as for
// SCREENSHOT_CAPTURED. The command agent and the shell cannot look at
// images: with DescribeImages on, an image without a caption stays
// without one.
func TestRunnerCaptions(t *testing.T) {
	for _, agent := range []string{"bash", AgentShell} {
		t.Run(agent, func(t *testing.T) {
			e := newRunnerEnv(t)
			e.startAgent(Config{Agent: agent, DescribeImages: true}, nil)
			u := e.user(contract.ChannelTelegram, "42")
			e.job(u, "m1", strings.Join([]string{
				pngScript(t, "shots/a.png"),
				"cp shots/a.png shots/b.png && cp shots/a.png shots/c.png && cp shots/a.png shots/d.png",
				`echo 'IMAGE_GENERATED|shots/a.png|The login form\nshows an error'`,
				`echo 'TELEGRAM_IMAGE_GENERATED|shots/b.png|📸 Evidence | task 7'`,
				`echo 'IMAGE_GENERATED|shots/c.png'`,
				`echo 'SCREENSHOT_CAPTURED:shots/d.png'`,
				`echo 'IMAGE_GENERATED|../../../etc/passwd|secret'`,
				`echo "IMAGE_GENERATED|$(mktemp -p /tmp x.XXXX.png)|outside"`,
				"echo done",
			}, "\n"))
			ev := e.waitDone(u, "m1", runnerWait)
			want := []string{"The login form\nshows an error", "📸 Evidence | task 7", "", ""}
			if got := captions(ev.Images); !slices.Equal(got, want) {
				t.Fatalf("done images %+v; want four, captioned %q", ev.Images, want)
			}
			if ev.Text != "done" {
				t.Errorf("reply %q; want %q", ev.Text, "done")
			}
			var got []string
			for _, img := range e.imageEvents(u, "m1") {
				got = append(got, img.Image.Caption)
			}
			if !slices.Equal(got, want) {
				t.Errorf("image events' captions %q; want %q", got, want)
			}
		})
	}
}

// describeJob publishes a job the agent runs without asking (mode auto).
func (e *runnerEnv) describeJob(u contract.User, id, text string) {
	e.t.Helper()
	j := contract.Job{ID: id, User: u, Text: text, At: time.Now().UTC(), Mode: contract.ModeAuto}
	data, err := contract.Encode(&j)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.js.Publish(e.t.Context(), contract.JobSubject(u), data, jetstream.WithMsgID(contract.MsgID(u, id, "job"))); err != nil {
		e.t.Fatal(err)
	}
}

// With DescribeImages, the real Claude Code CLI is asked, in a second run
// (read-only, a fresh session, in the same workspace), to describe the
// image it handed over without a caption (by its absolute path), named in
// the prompt relative to the workspace; its answer is the caption, on
// the image event and in the done event. When that run fails, the image
// comes without a caption and the log says why.
func TestRunnerDescribesImages(t *testing.T) {
	const caption = "The login button is hidden behind the cookie banner."
	for _, fails := range []bool{false, true} {
		t.Run(fmt.Sprintf("fails=%t", fails), func(t *testing.T) {
			e := newRunnerEnv(t)
			u := e.user(contract.ChannelWeb, "alice")
			shot := filepath.Join(e.workspaces, u.Key(), "shots", "login.png")
			last := claudetest.Text(caption)
			if fails {
				last = claudetest.APIError(500, "model down")
			}
			m := claudetest.NewModel(t,
				claudetest.ToolUse("Bash", map[string]string{"command": pngScript(t, "shots/login.png"), "description": "take the shot"}),
				claudetest.Text("Here is the login page.\nSCREENSHOT_CAPTURED:"+shot),
				claudetest.ToolUse("Read", map[string]string{"file_path": shot}),
				last,
			)
			claudetest.Setenv(t, m)
			var logs natstest.Logs
			e.startAgent(Config{Agent: AgentClaude, ClaudeBin: claudetest.Binary(t), AgentUser: claudetest.AgentUser(t), DescribeImages: true}, &logs)
			e.describeJob(u, "m1", "Why is the login page broken?")
			ev := e.waitDone(u, "m1", claudeTimeout)
			if ev.Status != contract.StatusOK || ev.Text != "Here is the login page." {
				t.Errorf("done %q: %q; want ok and the main run's reply", ev.Status, ev.Text)
			}
			want := caption
			if fails {
				want = ""
			}
			if got := captions(ev.Images); !slices.Equal(got, []string{want}) {
				t.Fatalf("done images %+v; want one captioned %q", ev.Images, want)
			}
			if imgs := e.imageEvents(u, "m1"); len(imgs) != 1 || imgs[0].Image.Caption != want {
				t.Errorf("image events %+v; want one captioned %q", imgs, want)
			}
			var describe *claudetest.Request
			reqs := m.MainRequests()
			for i, r := range reqs {
				if strings.Contains(firstText(r), "Describe the screenshot") {
					describe = &reqs[i]
					break
				}
			}
			if describe == nil {
				t.Fatalf("no request of the model asked to describe the screenshot; requests: %d", len(reqs))
			}
			text := firstText(*describe)
			if !strings.Contains(text, "at shots/login.png in") || !strings.Contains(text, "Why is the login page broken?") {
				t.Errorf("the describe run's prompt %q does not name the image (relative to the workspace) and the request", text)
			}
			if strings.Contains(string(describe.Body), "Here is the login page") {
				t.Error("the describe run's first request carries the main run's conversation; want a fresh session")
			}
			if !fails {
				if res := m.MainRequests()[3].ToolResults(); len(res) != 1 || res[0].IsError {
					t.Errorf("the describe run's Read of the image: %+v; want it allowed", res)
				}
			}
			if fails && len(logs.Find(t, "image not described: the describe run failed", nil)) == 0 {
				t.Error("no log line says why the image has no caption")
			}
			if _, err := os.Stat(shot); err != nil {
				t.Errorf("the reported image: %v; want it left in the workspace (only dropped ones are removed)", err)
			}
		})
	}
}

// firstText is the text of a request's first message.
func firstText(r claudetest.Request) string {
	if len(r.Messages) == 0 {
		return ""
	}
	var b strings.Builder
	for _, c := range r.Messages[0].Content {
		b.WriteString(c.Text)
	}
	return b.String()
}
