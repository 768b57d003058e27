package contract

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Notion tasks. Ingress turns a page of a Notion database into a message of
// the person the database is configured for; the message's id names the
// page and the version of it that started the job, so that egress knows
// which events to mirror onto the page and the runner which task id the
// agent's screenshots carry.
const notionPrefix = "notion-"

// pageIDRE: a Notion page id without its dashes.
var pageIDRE = regexp.MustCompile(`^[0-9a-f]{32}$`)

// NotionJobID is the message id of Notion page pageID as last edited at
// edited: "notion-<32 hex digits>-<unix milliseconds>". A page edited
// back into the filter later (moved to "To do" again) is a new message.
func NotionJobID(pageID string, edited time.Time) string {
	return notionPrefix + NotionTaskID(pageID) + "-" + strconv.FormatInt(edited.UnixMilli(), 10)
}

// NotionTaskID is a page id as a task id: lower case, without dashes,
// the form screenshots of the task are named with (<task id>_*.png).
func NotionTaskID(pageID string) string {
	return strings.ToLower(strings.ReplaceAll(pageID, "-", ""))
}

// NotionPage is the task id (NotionTaskID) of the page a message id made
// by NotionJobID names, and whether it is one.
func NotionPage(jobID string) (taskID string, ok bool) {
	rest, ok := strings.CutPrefix(jobID, notionPrefix)
	if !ok {
		return "", false
	}
	page, edited, ok := strings.Cut(rest, "-")
	if !ok || !pageIDRE.MatchString(page) {
		return "", false
	}
	if _, err := strconv.ParseInt(edited, 10, 64); err != nil {
		return "", false
	}
	return page, true
}

// BucketNotion remembers, per page (key page.<task id>), the last edited
// time of the page's version that started a job, so that a poll, a
// restart or a second ingress does not start it again.
const BucketNotion = "notion"

// NotionPageKey is page taskID's key in BucketNotion.
func NotionPageKey(taskID string) string { return "page." + taskID }
