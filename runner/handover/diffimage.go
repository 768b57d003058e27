package handover

import (
	"context"
	"encoding/base64"
	"fmt"
	"html"
	"strings"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/handover/pageshot"
)

// diffImageLines is how many lines of a diff its image shows.
const diffImageLines = 400

// DiffImage draws a diff as an image a phone's width and as tall as the
// diff (a short one is not padded to the screen's height) in the
// endpoint's browser, stores it and publishes its image event.
func (s *Endpoint) DiffImage(ctx context.Context, job contract.Job, diff string) (contract.Image, error) {
	page := "data:text/html;charset=utf-8;base64," + base64.StdEncoding.EncodeToString([]byte(diffHTML(diff, diffImageLines)))
	shot, err := s.browser.Capture(ctx, pageshot.Options{URL: page, FullPage: true, FitContent: true, MaxBytes: screenshotMaxBytes, Profile: job.User.Key()})
	if err != nil {
		return contract.Image{}, err
	}
	img, err := s.store.storeImage(ctx, job.User, shot)
	if err != nil {
		return contract.Image{}, err
	}
	s.store.publishImage(ctx, job, img, "diff")
	return img, nil
}

// diffHTML is a page showing a unified diff the way code review tools do:
// a header per file, hunks in blue, added lines green, removed lines red,
// long lines wrapped to the phone's width. It shows the first maxLines
// lines and says how many more there are.
func diffHTML(diff string, maxLines int) string {
	var b strings.Builder
	b.WriteString(`<!doctype html><meta charset=utf-8><meta name=viewport content="width=device-width">
<style>
body{margin:0;padding-bottom:8px;background:#fff;color:#1f2328;font:12px/1.45 "DejaVu Sans Mono","Liberation Mono",ui-monospace,monospace}
div{white-space:pre-wrap;overflow-wrap:anywhere;tab-size:4;padding:0 8px 0 20px;text-indent:-12px;min-height:1.45em}
.f{background:#f6f8fa;font-weight:bold;border-top:1px solid #d0d7de;border-bottom:1px solid #d0d7de;padding:6px 8px;text-indent:0;margin-top:8px}
.h{background:#ddf4ff;color:#0550ae}
.a{background:#e6ffec;color:#116329}
.d{background:#ffebe9;color:#82071e}
.m{color:#59636e;padding:8px;text-indent:0}
</style>
`)
	var lines []string // those the image shows: the file header stands for the metadata lines
	for _, line := range strings.Split(strings.TrimRight(diff, "\n"), "\n") {
		if !diffMeta(line) {
			lines = append(lines, line)
		}
	}
	for _, line := range lines[:min(len(lines), maxLines)] {
		class := ""
		switch {
		case strings.HasPrefix(line, "diff --git "):
			class, line = "f", diffFileName(line)
		case strings.HasPrefix(line, "@@"):
			class = "h"
		case strings.HasPrefix(line, "+"):
			class = "a"
		case strings.HasPrefix(line, "-"):
			class = "d"
		}
		if class != "" {
			fmt.Fprintf(&b, "<div class=%s>%s</div>\n", class, html.EscapeString(line))
		} else {
			fmt.Fprintf(&b, "<div>%s</div>\n", html.EscapeString(line))
		}
	}
	if rest := len(lines) - maxLines; rest > 0 {
		fmt.Fprintf(&b, "<div class=m>… and %s</div>\n", contract.Plural(rest, "more line"))
	}
	return b.String()
}

// diffMeta: the lines of a file's header in a git diff other than the
// first ("diff --git").
func diffMeta(line string) bool {
	for _, p := range []string{"+++ ", "--- ", "index ", "new file mode", "deleted file mode", "old mode", "new mode", "similarity index", "rename from", "rename to"} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}

// diffFileName is the file a "diff --git a/x b/x" line is about (of a new
// file compared with /dev/null: "diff --git a/dev/null b/x").
func diffFileName(line string) string {
	if _, name, ok := strings.Cut(line, " b/"); ok {
		return name
	}
	return strings.TrimPrefix(line, "diff --git ")
}
