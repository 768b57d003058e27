package contract_test

import (
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
)

// A Notion page's message id names the page (as a task id: lower case, no
// dashes) and its version; other message ids name none, however close.
func TestNotionJobID(t *testing.T) {
	page := "1A2B3C4D-5E6F-7a8b-9c0d-1e2f3a4b5c6d"
	edited := time.Date(2026, 11, 24, 9, 30, 0, 0, time.UTC)
	id := contract.NotionJobID(page, edited)
	if want := "notion-1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d-1795512600000"; id != want {
		t.Fatalf("NotionJobID = %q; want %q", id, want)
	}
	if task, ok := contract.NotionPage(id); !ok || task != "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d" {
		t.Errorf("NotionPage(%q) = %q, %v; want the page's task id", id, task, ok)
	}
	if contract.NotionJobID(page, edited.Add(time.Minute)) == id {
		t.Error("a later version of the page has the same id")
	}
	for _, other := range []string{
		"SM0123456789abcdef0123456789abcdef", "tg17", "notion-", "notion-1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d",
		"notion-1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6-17", "notion-1A2B3C4D5E6F7A8B9C0D1E2F3A4B5C6D-17",
		"notion-1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d-x", "notion-../../etc/passwd-17",
	} {
		if task, ok := contract.NotionPage(other); ok {
			t.Errorf("NotionPage(%q) = %q; want none", other, task)
		}
	}
}
