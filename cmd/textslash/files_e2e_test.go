package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/telegramtest"
)

// fileScript writes a CSV in the workspace and hands it to the person.
const fileScript = "printf 'a,b\\n1,2\\n' > out.csv; echo FILE_CAPTURED:out.csv; echo here it is"

const fileCSV = "a,b\n1,2\n"

// An agent's FILE_CAPTURED file reaches Telegram as a document: one
// sendDocument with the file's bytes under its name, the reply as its
// caption. (TEXTSLASH_AGENT=bash: a command agent running the message as
// a script, which reads the marker lines.)
func TestFileToTelegram(t *testing.T) {
	api := telegramtest.NewAPI(t)
	inst := startServe(t, append(telegramEnv(api), "TEXTSLASH_AGENT=bash")...)
	if code := telegramUpdate(t, inst, tgSecret, telegramtest.Update(30, 4242, fileScript, "")); code != http.StatusOK {
		t.Fatalf("update: %d", code)
	}
	calls := api.WaitCalls(t, 1, 30*time.Second)
	c := calls[0]
	if c.Method != "sendDocument" || c.ChatID != "4242" || c.Text != "here it is" || len(c.Documents) != 1 ||
		c.DocumentName != "out.csv" || string(c.DocumentData) != fileCSV {
		t.Errorf("reply %+v; want one document out.csv with the file's bytes, captioned \"here it is\"", c)
	}
}

// The same over the web chat: the done event carries the file's signed
// /files/ link with its name, and the link downloads the same bytes as an
// attachment.
func TestFileToWebChat(t *testing.T) {
	inst := startServe(t, "TEXTSLASH_AGENT=bash")
	c := inst.newChat(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := c.events(ctx)
	id := c.send(fileScript)
	done := waitFor(t, events, 30*time.Second, func(ev sseEvent) bool { return ev.Kind == "done" && ev.Event.JobID == id })
	var ev struct {
		ImageURLs []string `json:"image_urls"`
	}
	if err := json.Unmarshal([]byte(done.Raw), &ev); err != nil {
		t.Fatal(err)
	}
	if done.Event.Text != "here it is" || len(done.Event.Images) != 1 || len(ev.ImageURLs) != 1 {
		t.Fatalf("done %s; want the reply and one file", done.Raw)
	}
	f := done.Event.Images[0]
	if f.Name != "out.csv" || contract.IsImage(f.ContentType) || !strings.HasPrefix(ev.ImageURLs[0], "/files/"+f.ID+"/out.csv?") {
		t.Errorf("file %+v at %q; want out.csv under /files/", f, ev.ImageURLs[0])
	}
	resp, err := c.client.Get(inst.URL + ev.ImageURLs[0])
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != fileCSV {
		t.Fatalf("GET %s: %s %q; want the file's bytes", ev.ImageURLs[0], resp.Status, body)
	}
	if got := resp.Header.Get("Content-Disposition"); got != `attachment; filename="out.csv"` {
		t.Errorf("Content-Disposition %q; want an attachment named out.csv", got)
	}
	if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("X-Content-Type-Options %q; want nosniff", got)
	}
	// Without its signature the link is refused.
	path, _, _ := strings.Cut(ev.ImageURLs[0], "?")
	if resp, err := http.Get(inst.URL + path); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("GET %s unsigned: %v %v; want 403", path, resp.Status, err)
	}
}

// In the web chat page, in real Chromium, a file shows as a download link
// named by the file, whose link downloads it.
func TestFileLinkInBrowser(t *testing.T) {
	ctx := browser(t, 60*time.Second) // first: skips without Chromium
	inst := startServe(t, "TEXTSLASH_AGENT=bash")
	if err := chromedp.Do(ctx,
		chromedp.Navigate(inst.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("input")),
		chromedp.SendKeys(chromedp.ID("input"), fileScript),
		chromedp.Click(chromedp.ID("send")),
	); err != nil {
		t.Fatalf("open the page and send: %v", err)
	}
	waitPage(ctx, t, `(n) => document.querySelectorAll('#messages .reply a.file').length >= Number(n)`, "1", "a file link")
	type link struct {
		Text, Download, Disposition, Body string
		Images                            int
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[link](`(async () => {
		const a = document.querySelector('#messages .reply a.file');
		const r = await fetch(a.href);
		return {Text: a.textContent, Download: a.download, Disposition: r.headers.get('Content-Disposition'), Body: await r.text(),
			Images: document.querySelectorAll('#messages .reply img').length};
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if got.Text != "out.csv" || got.Download != "out.csv" || got.Disposition != `attachment; filename="out.csv"` || got.Body != fileCSV || got.Images != 0 {
		t.Errorf("link %+v; want out.csv, downloading the file, and no image", got)
	}
}
