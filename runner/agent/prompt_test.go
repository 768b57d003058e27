package agent

import (
	"strings"
	"testing"
)

// The system prompt tells Claude how to hand over a file.
func TestSystemPromptFiles(t *testing.T) {
	if !strings.Contains(SystemPrompt, "FILE_CAPTURED:<path") {
		t.Errorf("SystemPrompt does not tell about FILE_CAPTURED:\n%s", SystemPrompt)
	}
}

// The system prompt tells Claude how to name its screenshots for the task
// and how to caption an image.
func TestSystemPromptTaskScreenshots(t *testing.T) {
	for _, want := range []string{"tmp/ai_screenshots/<task id>_<timestamp>.png", "$TEXTSLASH_TASK_ID", "IMAGE_GENERATED|<path"} {
		if !strings.Contains(SystemPrompt, want) {
			t.Errorf("SystemPrompt does not say %q:\n%s", want, SystemPrompt)
		}
	}
}

// The system prompt tells Claude to start a dev server with textslash
// background (not & or nohup, which end with the run) and to hand the
// person its link with textslash preview, as it tells about textslash
// shot: the command, and the endpoint's request without it.
func TestSystemPromptBackgroundAndPreview(t *testing.T) {
	for _, want := range []string{
		"textslash background <command>", "textslash preview <port>", ".textslash/background/<id>.log", "nohup",
		`"${TEXTSLASH_SHOT_URL%/shot}/background"`, `"${TEXTSLASH_SHOT_URL%/shot}/preview"`, "--data-urlencode arg=",
	} {
		if !strings.Contains(SystemPrompt, want) {
			t.Errorf("SystemPrompt does not say %q:\n%s", want, SystemPrompt)
		}
	}
}
