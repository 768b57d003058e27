package handover

import (
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
)

// notionPage is a Notion page id as its API gives it, with dashes.
const notionPage = "0123abcd-4567-89ab-cdef-0123456789ab"

// A job a Notion page started has the page's task id; any other job its
// own id, made safe for a file name.
func TestTaskID(t *testing.T) {
	tests := []struct{ job, want string }{
		{contract.NotionJobID(notionPage, time.UnixMilli(1_700_000_000_000)), "0123abcd456789abcdef0123456789ab"},
		{"SM0123abc", "SM0123abc"},
		{"30", "30"},
		{"a b:c", "a_b_c"},
		{"notion-nothex-1", "notion-nothex-1"},
	}
	for _, tt := range tests {
		if got := TaskID(tt.job); got != tt.want {
			t.Errorf("TaskID(%q) = %q; want %q", tt.job, got, tt.want)
		}
	}
}

// Dropped files named <task id>_*.png|jpg|jpeg are that task's; one named
// <something>_<digits> for an image is another task's; anything else has
// no task.
func TestDropOwner(t *testing.T) {
	const task = "SM1"
	tests := []struct {
		name string
		want dropOwner
	}{
		{"SM1_1748855141.png", dropMine},
		{"SM1_login.JPG", dropMine},
		{"SM1_x.jpeg", dropMine},
		{"login_bug_1748855141.png", dropOthers},
		{"SM2_1748855141.jpg", dropOthers},
		{"SM1_1.gif", dropUntagged},
		{"app.png", dropUntagged},
		{"shot_v2.png", dropUntagged},
		{"notes_12.txt", dropUntagged},
		{"_12.png", dropUntagged},
	}
	for _, tt := range tests {
		if got := ownerOf(tt.name, task); got != tt.want {
			t.Errorf("ownerOf(%q, %q) = %v; want %v", tt.name, task, got, tt.want)
		}
	}
}
