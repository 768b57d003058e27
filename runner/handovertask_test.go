package runner

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/natstest"
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

// A run sees its task id as TEXTSLASH_TASK_ID and NOTION_TASK_ID. Of the
// files in tmp/ai_screenshots/, it takes its own task's fresh ones and
// those without a task; its own older than 10 minutes are refused (with a
// log line) and removed, another task's are left for that task while
// fresh and removed once stale.
func TestRunnerTaskScreenshots(t *testing.T) {
	e := newRunnerEnv(t)
	var logs natstest.Logs
	e.startAgent(Config{Agent: AgentShell}, &logs)
	u := e.user(contract.ChannelTelegram, "42")
	job := contract.NotionJobID(notionPage, time.Now())
	task := contract.NotionTaskID(notionPage)
	drop := filepath.Join(e.workspaces, u.Key(), DropDir)
	if err := os.MkdirAll(drop, 0o755); err != nil {
		t.Fatal(err)
	}
	stale := time.Now().Add(-11 * time.Minute)
	files := map[string]time.Time{
		task + "_1000.png":         stale,      // mine, stale: refused, removed
		"login_bug_1748855141.png": time.Now(), // another task's, fresh: left
		"nav_issue_1748855200.png": stale,      // another task's, stale: removed
		"app.png":                  stale,      // no task: taken, as ever
	}
	for name, at := range files {
		p := filepath.Join(drop, name)
		if err := os.WriteFile(p, pngBytes(t), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	e.job(u, job, `echo "task=$TEXTSLASH_TASK_ID notion=$NOTION_TASK_ID"; cp `+DropDir+`/app.png "`+DropDir+`/${TEXTSLASH_TASK_ID}_$(date +%s).png"`)
	ev := e.waitDone(u, job, runnerWait)
	if want := "task=" + task + " notion=" + task; ev.Text != want {
		t.Errorf("reply %q; want %q", ev.Text, want)
	}
	if len(ev.Images) != 2 {
		t.Errorf("images %+v; want two: the untagged file and the run's own fresh one", ev.Images)
	}
	entries, err := os.ReadDir(drop)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, en := range entries {
		left = append(left, en.Name())
	}
	if want := []string{"login_bug_1748855141.png"}; !slices.Equal(left, want) {
		t.Errorf("%s holds %q; want only the other task's fresh file", DropDir, left)
	}
	refused := logs.Find(t, "screenshot refused: older than 10 minutes", nil)
	if len(refused) != 1 || !strings.Contains(refused[0]["path"].(string), task+"_1000.png") {
		t.Errorf("log lines about the stale screenshot: %v; want one naming it", refused)
	}
}
