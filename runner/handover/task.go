package handover

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/sandbox"
)

// Screenshots matched to their task: every run knows its task
// id, and an agent names the screenshots it drops in DropDir
// <task id>_<timestamp>.png, so that a run takes its own task's and leaves
// another task's for that task.
const (
	// TaskIDVar holds the run's task id (TaskID) in every agent's
	// environment; NotionTaskIDVar holds the same id, so that an agent may
	// read either name.
	TaskIDVar       = "TEXTSLASH_TASK_ID"
	NotionTaskIDVar = "NOTION_TASK_ID"
	// screenshotMaxAge: a screenshot named for a task is stale when older
	// than this, 10 minutes: its own task's when modified this long before
	// the run started, another task's this long before now (droppedFor).
	screenshotMaxAge = 10 * time.Minute
)

// TaskID is the task id of job jobID: the Notion page's for a job a page
// started (contract.NotionPage), else the job id made safe for a file
// name.
func TaskID(jobID string) string {
	if task, ok := contract.NotionPage(jobID); ok {
		return task
	}
	return contract.SafeName(jobID)
}

// TaskEnv is the environment that tells a run its task id (TaskID).
func TaskEnv(task string) []string {
	return []string{TaskIDVar + "=" + task, NotionTaskIDVar + "=" + task}
}

// dropOwner says whose a file in DropDir is.
type dropOwner int

const (
	dropUntagged dropOwner = iota // named for no task: the run takes it
	dropMine                      // named for the run's task
	dropOthers                    // named for another task
)

var (
	// imageNameRE: a PNG or JPEG file's name.
	imageNameRE = regexp.MustCompile(`(?i)\.(png|jpe?g)$`)
	// taskImageRE: an image named for a task: <task id>_<digits>.
	taskImageRE = regexp.MustCompile(`(?i)^.+_[0-9]+\.(png|jpe?g)$`)
)

// ownerOf says whose the image file name in DropDir is to the run of task.
func ownerOf(name, task string) dropOwner {
	switch {
	case !imageNameRE.MatchString(name):
		return dropUntagged
	case strings.HasPrefix(name, task+"_"):
		return dropMine
	case taskImageRE.MatchString(name):
		return dropOthers
	}
	return dropUntagged
}

// droppedFor picks the run's files among those dropped in DropDir (oldest
// first): those without a task, and its task's modified since
// screenshotMaxAge before the run started. It removes its task's older
// ones (refused, with a log line) and another task's older than
// screenshotMaxAge now; another task's fresh ones stay for that task.
// Files the run reported by name are its own: they are left to the
// caller.
func droppedFor(log zerolog.Logger, dir, task string, started, now time.Time, reported func(path string) bool) []string {
	var take []string
	for _, f := range dropped(dir) {
		if reported(f.path) {
			continue
		}
		log := log.With().Str("path", f.path).Time("modified", f.mod).Logger()
		switch ownerOf(filepath.Base(f.path), task) {
		case dropUntagged:
			take = append(take, f.path)
		case dropMine:
			if f.mod.Before(started.Add(-screenshotMaxAge)) {
				log.Warn().Str("task_id", task).Msg("screenshot refused: older than 10 minutes")
				_ = sandbox.RemoveBeneath(dir, f.path)
				continue
			}
			take = append(take, f.path)
		case dropOthers:
			if f.mod.Before(now.Add(-screenshotMaxAge)) {
				log.Info().Msg("another task's screenshot removed: older than 10 minutes")
				_ = sandbox.RemoveBeneath(dir, f.path)
				continue
			}
			log.Debug().Msg("another task's screenshot left for it")
		}
	}
	return slices.Clip(take)
}
