package agent

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TELEGRAM_IMAGE_GENERATED|<path>|<caption> and its channel-neutral name
// IMAGE_GENERATED|<path>|<caption> are marker lines in Claude's
// final answer and in a command agent's output: the caption is the rest of
// the line (| included), a literal \n in it a line break, and optional.
func TestImageMarkers(t *testing.T) {
	const out = "Look:\n" +
		`IMAGE_GENERATED|shots/a.png|The login form\nshows an error` + "\n" +
		"TELEGRAM_IMAGE_GENERATED| b.png |📸 Evidence | task 7 \n" +
		"IMAGE_GENERATED|c.png\n" +
		"IMAGE_GENERATED|d.png|\n" +
		"IMAGE_GENERATED|\n" +
		"say IMAGE_GENERATED|x.png inline\n" +
		"SCREENSHOT_CAPTURED:e.png"
	want := []Handover{
		{Path: "shots/a.png", Caption: "The login form\nshows an error"},
		{Path: "b.png", Caption: "📸 Evidence | task 7"},
		{Path: "c.png"},
		{Path: "d.png"},
		{Path: "e.png"},
	}
	reply, _, shots := markerLines(out)
	if want := "Look:\nsay IMAGE_GENERATED|x.png inline"; reply != want {
		t.Errorf("reply %q; want %q", reply, want)
	}
	if got := shots; !slices.Equal(got, want) {
		t.Errorf("claude's markers: %+v; want %+v", got, want)
	}

	r, _ := commandRun(t, "hi")
	res, err := Command{Line: "cat <<'EOF'\n" + out + "\nEOF\nprintf 'IMAGE_GENERATED|f.png|crlf\\r\\n'"}.Run(t.Context(), r)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Look:\nsay IMAGE_GENERATED|x.png inline\n"; res.Text != want {
		t.Errorf("command text %q; want %q", res.Text, want)
	}
	if got, want := res.Handovers, append(want, Handover{Path: "f.png", Caption: "crlf"}); !slices.Equal(got, want) {
		t.Errorf("command markers: %+v; want %+v", got, want)
	}

	// A caption is cut at captionMax characters.
	_, _, shots = markerLines("IMAGE_GENERATED|a.png|" + strings.Repeat("é", 5000))
	if c := shots[0].Caption; len([]rune(c)) != captionMax || !strings.HasSuffix(c, "…") {
		t.Errorf("a 5,000-character caption kept %d characters; want %d, ending in …", len([]rune(c)), captionMax)
	}
}

// FILE_CAPTURED lines are markers like SCREENSHOT_CAPTURED, in Claude's
// final answer and in a command agent's output; they come back marked as
// files.
func TestFileMarkers(t *testing.T) {
	reply, _, shots := markerLines("Here:\nFILE_CAPTURED: out.csv\nSCREENSHOT_CAPTURED:a.png\n  FILE_CAPTURED:report.pdf \nsay FILE_CAPTURED:x inline\nFILE_CAPTURED:")
	if want := "Here:\nsay FILE_CAPTURED:x inline"; reply != want {
		t.Errorf("reply %q; want %q", reply, want)
	}
	if want := []Handover{{Path: "out.csv", File: true}, {Path: "a.png"}, {Path: "report.pdf", File: true}}; !reflect.DeepEqual(shots, want) {
		t.Errorf("handed over %+v; want %+v", shots, want)
	}

	r, _ := commandRun(t, "hi")
	res, err := Command{Line: `echo 'FILE_CAPTURED: out.csv '; echo 'a FILE_CAPTURED:b'; printf 'FILE_CAPTURED:c.txt\r\n'; echo FILE_CAPTURED:`}.Run(t.Context(), r)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Handover{{Path: "out.csv", File: true}, {Path: "c.txt", File: true}}; !slices.Equal(res.Handovers, want) {
		t.Errorf("command handed over %+v; want %+v", res.Handovers, want)
	}
	if want := "a FILE_CAPTURED:b\n"; res.Text != want {
		t.Errorf("command text %q; want %q", res.Text, want)
	}
}
