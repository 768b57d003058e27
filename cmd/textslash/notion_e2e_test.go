package main

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/cmd/internal/app"
	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/notiontest"
	"github.com/textslash/textslash/runner/claudetest"
	"github.com/textslash/textslash/telegramtest"
)

const notionToken = "ntn_e2e_0123456789abcdef"

// notionEnv turns Notion tasks on against the fake Notion API, for
// Telegram chat 4242, polling every second.
func notionEnv(api *notiontest.Server, db string) []string {
	return []string{
		"NOTION_TOKEN=" + notionToken,
		"NOTION_DATABASE_ID=" + db,
		"TEXTSLASH_NOTION_API_URL=" + api.URL(),
		"TEXTSLASH_NOTION_PERSON=telegram:4242",
		"TEXTSLASH_NOTION_POLL=1s",
	}
}

// A bug report filed in Notion becomes one run of the real Claude Code
// CLI in the person's workspace; the page moves to
// In progress, gets a progress comment, the screenshot the agent took
// (uploaded, under a comment with its caption) and the reply, and ends
// Done; the person gets the reply and the photo on Telegram. A rate
// limit on the way is waited out, and neither later polls nor a restart
// start the page again.
func TestNotionBugReport(t *testing.T) {
	notion := notiontest.New(t, notionToken)
	db := notion.AddDatabase("Status", "To do", "In progress", "Done", "Failed")
	page := notion.AddPage(db, "Login screen is broken", "To do", "The login button does nothing on /login.")
	task := contract.NotionTaskID(page)

	src := sharedDir(t)
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 64, 48))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "login.png"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := "tmp/ai_screenshots/" + task + "_1748855141.png"
	model := claudetest.NewModel(t,
		claudetest.ToolUse("Bash", map[string]any{"command": fmt.Sprintf("mkdir -p tmp/ai_screenshots && cp %s/login.png tmp/ai_screenshots/${NOTION_TASK_ID}_1748855141.png", src),
			"description": "capture the login page"}),
		claudetest.Text("The login button has no click handler.\nIMAGE_GENERATED|"+shot+"|Login page: the button is greyed out"),
	)
	tg := telegramtest.NewAPI(t)
	notion.RateLimit(1, 1) // the first poll is told to wait a second
	inst := startClaude(t, model, append(append(telegramEnv(tg), notionEnv(notion, db)...), "TEXTSLASH_SANDBOX_SHARE="+src)...)

	natstest.CheckFor(t, 90*time.Second, 100*time.Millisecond, func() error {
		if s := notion.Status(page); s != "Done" {
			return fmt.Errorf("page status %q; want Done", s)
		}
		return nil
	})
	comments := notion.Comments(page)
	var texts []string
	for _, c := range comments {
		texts = append(texts, c.Text)
	}
	if len(comments) != 3 {
		t.Fatalf("comments %q; want progress, the screenshot and the reply", texts)
	}
	if want := "⏳ Running `mkdir -p tmp/ai_screenshots"; !strings.HasPrefix(comments[0].Text, want) {
		t.Errorf("first comment %q; want progress %q…", comments[0].Text, want)
	}
	img := comments[1]
	if img.Text != "Login page: the button is greyed out" || len(img.Files) != 1 {
		t.Errorf("screenshot comment %q with %d files; want the caption and the image", img.Text, len(img.Files))
	} else if _, format, err := image.DecodeConfig(bytes.NewReader(img.Files[0].Data)); err != nil || !strings.HasPrefix(img.Files[0].ContentType, "image/") {
		t.Errorf("uploaded file %s (%s): %v; want an image", img.Files[0].Name, format, err)
	}
	if want := "✅ Done.\n\nThe login button has no click handler."; comments[2].Text != want {
		t.Errorf("reply comment %q; want %q", comments[2].Text, want)
	}
	if n := notion.Requests("PATCH", "/v1/pages/"); n != 2 {
		t.Errorf("%d page updates; want 2 (In progress, then Done)", n)
	}
	if asked := strings.Join(userTurns(model), "\n"); !strings.Contains(asked, "Login screen is broken") || !strings.Contains(asked, "The login button does nothing on /login.") {
		t.Errorf("the agent was asked %q; want the page's title and text", asked)
	}
	natstest.CheckFor(t, 15*time.Second, 100*time.Millisecond, func() error {
		var reply, photo bool
		for _, c := range tg.Calls() {
			reply = reply || c.ChatID == "4242" && strings.Contains(c.Text, "no click handler")
			photo = photo || c.ChatID == "4242" && len(c.Photos) == 1 && c.Text == "Login page: the button is greyed out"
		}
		if !reply || !photo {
			return fmt.Errorf("Telegram calls %+v; want the reply and the captioned photo in chat 4242", tg.Calls())
		}
		return nil
	})

	// Through two more polls, a restart, and two more: nothing new.
	runs := model.Turns()
	nothingNew := func() error {
		if got := model.Turns(); got != runs {
			return fmt.Errorf("the model was asked %d more times after the page was done; want none", got-runs)
		}
		if n := len(notion.Comments(page)); n != 3 {
			return fmt.Errorf("%d comments after more polls; want still 3", n)
		}
		return nil
	}
	natstest.HoldsUntil(t, time.Now().Add(2500*time.Millisecond), nothingNew)
	inst.stop()
	inst.start(t)
	natstest.HoldsUntil(t, time.Now().Add(2500*time.Millisecond), nothingNew)
}

// Notion with the services as processes of their own, each as its nats.conf
// user: ingress polls and tells the person, egress creates its consumer,
// reads the screenshot from the media store and updates the page, and NATS
// refuses none of it.
func TestNotionSeparateServices(t *testing.T) {
	ns := runNATSUsers(t)
	notion := notiontest.New(t, notionToken)
	db := notion.AddDatabase("Status", "To do", "In progress", "Done", "Failed")
	src := sharedDir(t)
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 32, 24))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "login.png"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	tg := telegramtest.NewAPI(t)
	procs := map[string]*instance{}
	front := frontProxy(t, procs) // Telegram fetches the photo from media through it
	env := append(append(telegramEnv(tg), notionEnv(notion, db)...), "TEXTSLASH_AGENT=shell", "PUBLIC_URL="+front.URL,
		"TEXTSLASH_MEDIA_KEY=a-key-shared-by-media-and-egress", "TEXTSLASH_SANDBOX_SHARE="+src)
	for _, s := range app.All {
		procs[s] = startService(t, s, append(slices.Clone(env), ns.env(s)...)...)
	}
	page := notion.AddPage(db, "mkdir -p tmp/ai_screenshots && cp "+src+"/login.png tmp/ai_screenshots/${TEXTSLASH_TASK_ID}_1.png && echo fixed", "To do")
	natstest.CheckFor(t, 60*time.Second, 100*time.Millisecond, func() error {
		if s := notion.Status(page); s != "Done" {
			return fmt.Errorf("page status %q; want Done", s)
		}
		return nil
	})
	cs := notion.Comments(page)
	if len(cs) != 2 || len(cs[0].Files) != 1 || cs[1].Text != "✅ Done.\n\nfixed" {
		t.Errorf("comments %+v; want the screenshot, then the reply", cs)
	}
	natstest.CheckFor(t, 15*time.Second, 100*time.Millisecond, func() error {
		for _, c := range tg.Calls() {
			if strings.HasPrefix(c.Text, "📋 A task from Notion: mkdir") {
				return nil
			}
		}
		return fmt.Errorf("Telegram calls %+v; want the notice of the task", tg.Calls())
	})
	if v := ns.violations(); len(v) > 0 {
		t.Errorf("NATS refused the services %d times:\n%s", len(v), strings.Join(v, "\n"))
	}
}
