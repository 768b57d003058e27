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
	"github.com/textslash/textslash/runner/handover"
	"github.com/textslash/textslash/runner/internal/testkit"
)

// notionPage is a Notion page id as its API gives it, with dashes.
const notionPage = "0123abcd-4567-89ab-cdef-0123456789ab"

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
	drop := filepath.Join(e.workspaces, u.Key(), handover.DropDir)
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
		if err := os.WriteFile(p, testkit.PNG(t), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	e.job(u, job, `echo "task=$TEXTSLASH_TASK_ID notion=$NOTION_TASK_ID"; cp `+handover.DropDir+`/app.png "`+handover.DropDir+`/${TEXTSLASH_TASK_ID}_$(date +%s).png"`)
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
		t.Errorf("%s holds %q; want only the other task's fresh file", handover.DropDir, left)
	}
	refused := logs.Find(t, "screenshot refused: older than 10 minutes", nil)
	if len(refused) != 1 || !strings.Contains(refused[0]["path"].(string), task+"_1000.png") {
		t.Errorf("log lines about the stale screenshot: %v; want one naming it", refused)
	}
}
