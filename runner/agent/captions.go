package agent

import (
	"strings"

	"github.com/textslash/textslash/contract"
)

// Marker lines that hand the person something from the workspace (see
// Command). IMAGE_GENERATED|<path>|<caption> is the channel-neutral name
// of TELEGRAM_IMAGE_GENERATED|<path>|<caption>, which is still read: both
// send the image with its caption on every channel.
const (
	markerScreenshot    = "SCREENSHOT_CAPTURED:"
	markerFile          = "FILE_CAPTURED:"
	markerImage         = "IMAGE_GENERATED|"
	markerTelegramImage = "TELEGRAM_IMAGE_GENERATED|"
	// captionLineBreak is a line break, written in a marker line's caption.
	captionLineBreak = `\n`
	// captionMax is the most characters kept of a caption; channels cut
	// it further to their own limits.
	captionMax = 1024
)

// Handover is one thing a run handed over for the reply: an image (a
// screenshot, with its caption if any) or a file (FILE_CAPTURED), at Path
// as the agent wrote it (relative to the workspace, or absolute).
type Handover struct {
	Path    string
	Caption string
	File    bool
}

// handoverLine reads line as a marker that hands something over:
// SCREENSHOT_CAPTURED:<path>, FILE_CAPTURED:<path>, or
// [TELEGRAM_]IMAGE_GENERATED|<path>[|<caption>]. ok says whether it is
// one; h is what it hands over, with no Path when it names none.
func handoverLine(line string) (h Handover, ok bool) {
	if p, ok := strings.CutPrefix(line, markerScreenshot); ok {
		return Handover{Path: markerPath(p)}, true
	}
	if p, ok := strings.CutPrefix(line, markerFile); ok {
		if p = markerPath(p); p != "" {
			return Handover{Path: p, File: true}, true
		}
		return Handover{}, true
	}
	rest, ok := strings.CutPrefix(line, markerImage)
	if !ok {
		rest, ok = strings.CutPrefix(line, markerTelegramImage)
	}
	if !ok {
		return Handover{}, false
	}
	p, caption, _ := strings.Cut(rest, "|")
	if p = markerPath(p); p == "" {
		return Handover{}, true
	}
	return Handover{Path: p, Caption: markerCaption(caption)}, true
}

// markerPath is a marker line's path, trimmed; empty when there is none,
// or when it holds a NUL, which no path does (and which marks entries).
func markerPath(s string) string {
	if strings.Contains(s, "\x00") {
		return ""
	}
	return strings.TrimSpace(s)
}

// markerCaption is a marker line's caption as the person reads it: \n a
// line break, no NUL, trimmed, at most captionMax characters.
func markerCaption(s string) string {
	s = strings.ReplaceAll(s, "\x00", "")
	s = strings.ReplaceAll(s, captionLineBreak, "\n")
	return contract.CutRunes(strings.TrimSpace(s), captionMax)
}

// hasHandoverMarker reports whether text may hold a marker line
// handoverLine reads.
func hasHandoverMarker(text string) bool {
	return strings.Contains(text, markerScreenshot) || strings.Contains(text, markerFile) || strings.Contains(text, markerImage)
}

// handoverLines takes the lines handing something over (handoverLine:
// screenshots, images with captions, files), alone on their lines, out
// of an agent's final output, and returns what they hand over, in order.
// A marker naming nothing is taken out too. The runner checks what they
// name whichever agent wrote them.
func handoverLines(text string) (reply string, handed []Handover) {
	if !hasHandoverMarker(text) {
		return text, nil
	}
	var keep []string
	for _, line := range strings.Split(text, "\n") {
		h, ok := handoverLine(strings.TrimSpace(line))
		switch {
		case !ok:
			keep = append(keep, line)
		case h.Path != "":
			handed = append(handed, h)
		}
	}
	return strings.TrimSpace(strings.Join(keep, "\n")), handed
}
