package runner

import (
	"strings"
)

// Marker lines that hand the person something from the workspace (see
// Command). IMAGE_GENERATED|<path>|<caption> is seed 004's
// TELEGRAM_IMAGE_GENERATED|<path>|<caption> made channel-neutral: both
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

// captionMark separates an image's caption from its path in a Result's
// Screenshots entry (captionMarked).
const captionMark = "\x00caption:"

// handover is one thing a run handed over for the reply, as a Result's
// Screenshots entry carries it: an image (with its caption, if any) or a
// file (FILE_CAPTURED).
type handover struct {
	path    string
	caption string
	file    bool
}

// captionMarked is the Screenshots entry of the image at p with caption:
// no path holds a NUL, so captionMark tells where the path ends.
func captionMarked(p, caption string) string {
	if caption == "" {
		return p
	}
	return p + captionMark + caption
}

// parseHandover reads a Screenshots entry: a fileMarked path, a
// captionMarked image, or a plain image path.
func parseHandover(entry string) handover {
	if p, ok := fileCaptured(entry); ok {
		return handover{path: p, file: true}
	}
	p, caption, _ := strings.Cut(entry, captionMark)
	return handover{path: p, caption: caption}
}

// handoverLine reads line as a marker that hands something over:
// SCREENSHOT_CAPTURED:<path>, FILE_CAPTURED:<path>, or
// [TELEGRAM_]IMAGE_GENERATED|<path>[|<caption>]. ok says whether it is
// one; entry is its Screenshots entry, empty when it names no path.
func handoverLine(line string) (entry string, ok bool) {
	if p, ok := strings.CutPrefix(line, markerScreenshot); ok {
		return markerPath(p), true
	}
	if p, ok := strings.CutPrefix(line, markerFile); ok {
		if p = markerPath(p); p != "" {
			return fileMarked(p), true
		}
		return "", true
	}
	rest, ok := strings.CutPrefix(line, markerImage)
	if !ok {
		rest, ok = strings.CutPrefix(line, markerTelegramImage)
	}
	if !ok {
		return "", false
	}
	p, caption, _ := strings.Cut(rest, "|")
	if p = markerPath(p); p == "" {
		return "", true
	}
	return captionMarked(p, markerCaption(caption)), true
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
	return cutRunes(strings.TrimSpace(s), captionMax)
}

// hasHandoverMarker reports whether text may hold a marker line
// handoverLine reads.
func hasHandoverMarker(text string) bool {
	return strings.Contains(text, markerScreenshot) || strings.Contains(text, markerFile) || strings.Contains(text, markerImage)
}
