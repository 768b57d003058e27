package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"image"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/claudetest"
	"github.com/textslash/textslash/telegramtest"
)

// captionText is the caption the tests' agents give their image: the
// marker's \n is a line break.
const captionText = "The login form\nshows an error"

// pngBase64 is a small PNG, base64-encoded for a script to write.
func pngBase64(t *testing.T) string {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 40, 30))); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

// captionScript makes the image shots/login.png and hands it over with a
// caption (IMAGE_GENERATED), and drops a copy in tmp/ai_screenshots/
// named for the run's task; it says the task id.
func captionScript(t *testing.T) string {
	return "mkdir -p shots tmp/ai_screenshots && echo " + pngBase64(t) + " | base64 -d > shots/login.png && " +
		`cp shots/login.png "tmp/ai_screenshots/${TEXTSLASH_TASK_ID}_$(date +%s).png" && ` +
		`echo 'IMAGE_GENERATED|shots/login.png|The login form\nshows an error' && echo "task $TEXTSLASH_TASK_ID"`
}

// A command agent's captioned image reaches Telegram as a photo of its own
// with the caption, after the reply, which carries the screenshot the run
// dropped for its task (the sandboxed run knew its task id).
func TestCaptionToTelegram(t *testing.T) {
	api := telegramtest.NewAPI(t)
	inst := startServe(t, append(telegramEnv(api), "TEXTSLASH_AGENT=bash")...)
	if code := telegramUpdate(t, inst, tgSecret, telegramtest.Update(40, 4242, captionScript(t), "")); code != http.StatusOK {
		t.Fatalf("update: %d", code)
	}
	calls := api.WaitCalls(t, 2, 30*time.Second)
	if got := methods(calls); !slices.Equal(got, []string{"sendPhoto", "sendPhoto"}) {
		t.Fatalf("calls %q; want two photos", got)
	}
	task, ok := strings.CutPrefix(calls[0].Text, "task ")
	if !ok || task == "" || len(calls[0].Photos) != 1 {
		t.Errorf("first photo captioned %q; want the reply naming the task id", calls[0].Text)
	}
	if calls[1].Text != captionText || len(calls[1].Photos) != 1 {
		t.Errorf("second photo captioned %q; want %q", calls[1].Text, captionText)
	}
}

// methods lists the Bot API methods called.
func methods(calls []telegramtest.Call) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Method)
	}
	return out
}

// Over the web chat: the image event and the done event carry the caption;
// the run saw its job id as its task id, and the screenshot it dropped
// under that name came with the reply.
func TestCaptionToWebChat(t *testing.T) {
	inst := startServe(t, "TEXTSLASH_AGENT=bash")
	c := inst.newChat(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := c.events(ctx)
	id := c.send(captionScript(t))
	img := waitFor(t, events, 30*time.Second, func(ev sseEvent) bool { return ev.Kind == "image" && ev.Event.JobID == id })
	if img.Event.Image == nil || img.Event.Image.Caption != captionText {
		t.Errorf("first image event %s; want the captioned image", img.Raw)
	}
	done := waitFor(t, events, 30*time.Second, func(ev sseEvent) bool { return ev.Kind == "done" && ev.Event.JobID == id })
	if want := "task " + contract.SafeName(id); done.Event.Text != want {
		t.Errorf("reply %q; want %q", done.Event.Text, want)
	}
	var got []string
	for _, im := range done.Event.Images {
		got = append(got, im.Caption)
	}
	if want := []string{captionText, ""}; !slices.Equal(got, want) {
		t.Errorf("done images' captions %q; want %q (the marker's image, then the dropped one)", got, want)
	}
}

// With TEXTSLASH_DESCRIBE_SCREENSHOTS, the real Claude Code CLI (sandboxed,
// as the agent user) describes the screenshot it handed over without a
// caption, in a second run; the description is the image's caption on the
// web chat.
func TestDescriptionCaptionToWebChat(t *testing.T) {
	const description = "The login button is hidden behind the cookie banner."
	model := claudetest.NewModel(t,
		claudetest.ToolUse("Bash", map[string]any{"command": "mkdir -p shots && echo " + pngBase64(t) + " | base64 -d > shots/login.png"}),
		claudetest.Text("Here it is.\nSCREENSHOT_CAPTURED:shots/login.png"),
		claudetest.Text(description),
	)
	inst := startServe(t, append(claudeEnv(t, model), "TEXTSLASH_DEFAULT_MODE=auto", "TEXTSLASH_DESCRIBE_SCREENSHOTS=true")...)
	c := inst.newChat(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := c.events(ctx)
	id := c.send("show me the broken login page")
	done := waitFor(t, events, 90*time.Second, func(ev sseEvent) bool { return ev.Kind == "done" && ev.Event.JobID == id })
	if done.Event.Text != "Here it is." || len(done.Event.Images) != 1 || done.Event.Images[0].Caption != description {
		t.Fatalf("done %s; want the reply and the image captioned with the description", done.Raw)
	}
	reqs := model.MainRequests()
	if len(reqs) != 3 || !strings.Contains(string(reqs[2].Body), "Describe the screenshot at shots/login.png") {
		t.Errorf("the model got %d main requests; want the third to ask for the description of shots/login.png", len(reqs))
	}
	ws := filepath.Join(inst.Data, "workspaces", c.User.Key())
	if _, err := os.Stat(filepath.Join(ws, "shots", "login.png")); err != nil {
		t.Errorf("the screenshot: %v", err)
	}
}

// In the web chat page, in real Chromium, the caption shows under the
// image, line by line, as text.
func TestCaptionInBrowser(t *testing.T) {
	ctx := browser(t, 60*time.Second) // first: skips without Chromium
	inst := startServe(t, "TEXTSLASH_AGENT=bash")
	script := "mkdir -p shots && echo " + pngBase64(t) + " | base64 -d > shots/login.png && " +
		`echo 'IMAGE_GENERATED|shots/login.png|<b>The login form</b>\nshows an error' && echo here`
	if err := chromedp.Do(ctx,
		chromedp.Navigate(inst.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("input")),
		chromedp.SendKeys(chromedp.ID("input"), script),
		chromedp.Click(chromedp.ID("send")),
	); err != nil {
		t.Fatalf("open the page and send: %v", err)
	}
	waitPage(ctx, t, replyHas, "here", "the reply")
	waitPage(ctx, t, `(n) => document.querySelectorAll('#messages figcaption').length >= Number(n)`, "1", "a caption")
	type shown struct {
		Caption, Under string
		Bold, Captions int
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[shown](`(() => {
		const f = document.querySelector('#messages figcaption');
		return {Caption: f.innerText, Under: f.previousElementSibling ? f.previousElementSibling.tagName : '',
			Bold: document.querySelectorAll('#messages figcaption b').length,
			Captions: document.querySelectorAll('#messages figcaption').length};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "<b>The login form</b>\nshows an error"; got.Caption != want || got.Bold != 0 || got.Captions != 1 || got.Under != "A" {
		t.Errorf("caption %+v; want %q as text, once, under the image's link", got, want)
	}
}
