package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/textslash/textslash/contract"
)

// hostileMarkdown is a reply as an agent could write it: Markdown, with
// HTML and links that must not reach the page as HTML or as links.
var hostileMarkdown = "# Plan\n" +
	"Some **bold**, some *italic*, `inline <b>code</b>` and ***both*** and **bold with *italic* inside**.\n" +
	"A line break here\nand snake_case_names stay as they are.\n\n" +
	"- one\n- two\n  - nested\n\n" +
	"1. first\n2. second\n\n" +
	"[safe](https://example.com/docs) and https://example.org/bare.\n\n" +
	"[js](javascript:alert(1)) [data](data:text/html,<script>alert(1)</script>) [vb](vbscript:msgbox(1)) [rel](./README.md) [ent](&#106;avascript:alert(1))\n\n" +
	"<script>window.__pwned = 'script'</script>\n" +
	"<img src=x onerror=\"window.__pwned = 'img'\">\n" +
	"&lt;b&gt;entities&lt;/b&gt; &amp; more\n\n" +
	"Long: " + "averyveryverylongwordwithoutanyspaces" + "averyveryverylongwordwithoutanyspaces" + "averyveryverylongwordwithoutanyspaces" + "\n\n" +
	"| Column | Value |\n|---|:-:|\n| `a` | **b** |\n| " + strings.Repeat("averyveryverylongcell", 4) + " | <img src=x onerror=\"window.__pwned = 'table'\"> |\n\n" +
	"```go\n" +
	"func main() { fmt.Println(\"" + "a very long line of code that must scroll inside its own block and not the page " + "<img src=x onerror=window.__pwned='code'>\") }\n" +
	"```\n\n" +
	"```sh\n" +
	"echo unterminated <b>fence</b>\n" +
	"still code"

// The web chat renders an agent's Markdown reply (headings, bold, italic,
// inline and fenced code, lists, links, line breaks) into the page's own
// elements, safely: HTML in it shows as text and nothing of it runs, only
// http(s) links become links (in a new tab, without opener or referrer),
// and on a phone's 390 px the page does not scroll sideways while a code
// block scrolls on its own. A question's `code` shows as code, its
// buttons still there; textslash's own notices stay plain text.
func TestWebChatMarkdownInBrowser(t *testing.T) {
	ctx := browser(t, 90*time.Second) // first: skips without Chromium
	inst := startServe(t, "TEXTSLASH_AGENT=shell")
	sent, publish := eventPublisher(ctx, t, inst)
	openPhone(ctx, t, inst.URL)

	// A reply that comes from a run, as every reply does.
	sendInPage(ctx, t, "echo '**from the shell** and `code`'")
	u := nextInbound(t, sent, "typed echo").User
	waitPage(ctx, t, `(want) => [...document.querySelectorAll('#messages .reply .text strong')].some(e => e.textContent === want)`,
		"from the shell", "the shell's reply with its bold rendered")

	publish(u, contract.Event{Kind: contract.KindDone, JobID: "md-1", Status: contract.StatusOK, Text: hostileMarkdown}, "")
	// It is longer than a screen: it shows folded, its start rendered, and
	// Show all renders all of it.
	waitPage(ctx, t, `(want) => [...document.querySelectorAll('#messages .reply h1')].some(e => e.textContent === want)`,
		"Plan", "the Markdown reply's heading")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#messages .reply[data-job="md-1"] button.show-all`))); err != nil {
		t.Fatalf("press Show all: %v", err)
	}
	waitPage(ctx, t, replyHas, "still code", "the whole Markdown reply")
	const reply = `document.querySelector('#messages .reply[data-job="md-1"] .text')`

	texts := func(sel string) []string {
		t.Helper()
		got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...`+reply+`.querySelectorAll('`+sel+`')].map(e => e.textContent)`))
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	for _, tc := range []struct {
		sel  string
		want []string
	}{
		{"h1", []string{"Plan"}},
		{"strong", []string{"bold", "both", "bold with italic inside", "b"}},
		{"em", []string{"italic", "both", "italic"}},
		{":not(pre) > code", []string{"inline <b>code</b>", "a"}},
		{"th", []string{"Column", "Value"}},
		{"td", []string{"a", "b", strings.Repeat("averyveryverylongcell", 4), `<img src=x onerror="window.__pwned = 'table'">`}},
		{"ul > li", []string{"one", "twonested", "nested"}},
		{"ol > li", []string{"first", "second"}},
		{"pre > code", []string{
			"func main() { fmt.Println(\"a very long line of code that must scroll inside its own block and not the page <img src=x onerror=window.__pwned='code'>\") }",
			"echo unterminated <b>fence</b>\nstill code"}},
		{"a", []string{"safe", "https://example.org/bare"}},
		{"script, img, iframe, object, embed, b, svg, style", nil},
	} {
		if got := texts(tc.sel); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s: got %q; want %q", tc.sel, got, tc.want)
		}
	}

	// Only the renderer's own elements and attributes, whatever the text.
	odd, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...`+reply+`.querySelectorAll('*')].flatMap(e => {
		const tags = /^(P|H[1-6]|STRONG|EM|DEL|CODE|PRE|UL|OL|LI|A|SPAN|BLOCKQUOTE|HR|DIV|TABLE|THEAD|TBODY|TR|TH|TD)$/;
		const attrs = /^(class|href|target|rel|start|style)$/;
		return [...(tags.test(e.tagName) ? [] : [e.tagName]), ...[...e.attributes].map(a => a.name).filter(n => !attrs.test(n))];
	})`))
	if err != nil || len(odd) > 0 {
		t.Errorf("the reply has elements or attributes the renderer does not make: %q (%v)", odd, err)
	}

	links, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...`+reply+`.querySelectorAll('a')].map(a => a.getAttribute('href') + ' ' + a.target + ' ' + a.rel)`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"https://example.com/docs _blank noopener noreferrer", "https://example.org/bare _blank noopener noreferrer"}; strings.Join(links, "|") != strings.Join(want, "|") {
		t.Errorf("links %q; want %q", links, want)
	}

	shown, err := chromedp.Run(ctx, chromedp.Evaluate[string](reply+`.innerText`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"A line break here\nand snake_case_names stay as they are.",
		"javascript:alert(1)", "data:text/html,<script>alert(1)</script>", "vbscript:msgbox(1)", "./README.md", "&#106;avascript:alert(1)",
		"<script>window.__pwned = 'script'</script>",
		`<img src=x onerror="window.__pwned = 'img'">`,
		"&lt;b&gt;entities&lt;/b&gt; &amp; more",
	} {
		if !strings.Contains(shown, want) {
			t.Errorf("the reply does not show %q as text; it shows:\n%s", want, shown)
		}
	}
	for _, no := range []string{"**", "```", "# Plan"} {
		if strings.Contains(shown, no) {
			t.Errorf("the reply shows the Markdown %q; it shows:\n%s", no, shown)
		}
	}
	if pwned, err := chromedp.Run(ctx, chromedp.Evaluate[string](`String(window.__pwned)`)); err != nil || pwned != "undefined" {
		t.Errorf("the reply's HTML ran: window.__pwned = %s (%v)", pwned, err)
	}

	// On the phone: the page does not scroll sideways; the long code line
	// scrolls in its block.
	widths, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]float64](`(() => {
		const pre = `+reply+`.querySelector('pre');
		const m = document.getElementById('messages');
		const table = `+reply+`.querySelector('table').parentElement;
		return {inner: innerWidth, page: document.documentElement.scrollWidth, body: document.body.scrollWidth,
			messages: m.scrollWidth, messagesBox: m.clientWidth, pre: pre.scrollWidth, preBox: pre.clientWidth,
			preRight: pre.getBoundingClientRect().right,
			table: table.scrollWidth, tableBox: table.clientWidth, tableRight: table.getBoundingClientRect().right};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("widths at 390 px: %v", widths)
	if widths["page"] > widths["inner"] || widths["body"] > widths["inner"] || widths["messages"] > widths["messagesBox"] {
		t.Errorf("the page scrolls sideways at 390 px: %v", widths)
	}
	if widths["pre"] <= widths["preBox"] || widths["preRight"] > widths["inner"] {
		t.Errorf("the code block does not scroll on its own within the screen: %v", widths)
	}
	if widths["table"] <= widths["tableBox"] || widths["tableRight"] > widths["inner"] {
		t.Errorf("the wide table does not scroll on its own within the screen: %v", widths)
	}

	// A copy to look at afterwards.
	_, _ = chromedp.Run(ctx, chromedp.Evaluate[bool](`(`+reply+`.querySelector('.table').scrollIntoView(), true)`))
	if png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot()); err == nil {
		_ = os.WriteFile(filepath.Join(os.TempDir(), "webchat-markdown.png"), png, 0o644)
	}

	// A permission question's command shows as code; its buttons work as before.
	publish(u, contract.Event{Kind: contract.KindQuestion, JobID: "md-2", Question: 1,
		Text: "Claude wants to run `rm -rf <dir>`.", Choices: []string{"yes", "no"}}, "1")
	waitChoices(ctx, t, "md-2", "Yes+ No+")
	code, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector('#messages .question code') || {}).textContent`))
	if err != nil || code != "rm -rf <dir>" {
		t.Errorf("the question's code shows as %q (%v); want %q", code, err, "rm -rf <dir>")
	}

	// textslash's own notices stay plain text, line by line.
	publish(u, contract.Event{Kind: contract.KindNotice, Text: "Plain **notice**\nsecond line"}, "n1")
	const noticeHas = `(want) => [...document.querySelectorAll('#messages .notice')].some(e => e.innerText === want)`
	waitPage(ctx, t, noticeHas, "Plain **notice**\nsecond line", "the notice as it was written")
}
