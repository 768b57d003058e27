package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/sandbox"
	"github.com/textslash/textslash/runner/session"
	"github.com/textslash/textslash/runner/snapshot"
)

// Workspaces that follow people across runners. With snapshots on
// (Open), the runner stores a snapshot of the project a run worked in at the end
// of each run, before its reply (package snapshot: its history, its
// uncommitted work, the agent's session), and a runner meeting a project
// whose workspace it lacks — a person taken over from a runner that is
// gone, on another machine — rebuilds it from that snapshot before the
// job runs. A runner taking a
// person over sets aside the copies it kept from an earlier time it held
// them (they may be stale), so those are rebuilt from the snapshots too.

// MsgRestoreFailed: a project's snapshot could not be restored (with its
// name); why is for the log.
const MsgRestoreFailed = "Your project %s could not be brought over from the server that had it."

// projectURL is where project of u was cloned from ("" for the default
// one, or when the registry cannot tell).
func (w *Workspaces) projectURL(ctx context.Context, u contract.User, project string) string {
	if project == "" {
		return ""
	}
	reg, _, err := w.readProjects(ctx, u)
	if err != nil {
		return ""
	}
	p, _ := reg.Find(project)
	return p.URL
}

// restore rebuilds the missing workspace dir of job's project from its
// snapshot and tells the person what came over (tell); it reports whether
// the project is there now. Without a snapshot, a named project stays
// missing and the default one starts empty.
func (w *Workspaces) restore(ctx context.Context, job contract.Job, project, dir string, tell func(key, text string)) bool {
	log := *zerolog.Ctx(ctx)
	if w.snapshots == nil {
		return false
	}
	u := job.User
	name := contract.SnapshotName(u, project)
	if _, err := w.snapshots.GetInfo(ctx, name); err != nil {
		if !errors.Is(err, jetstream.ErrObjectNotFound) {
			log.Warn().Err(err).Str("snapshot", name).Msg("snapshot not looked up; the workspace starts empty")
		}
		return false
	}
	home := w.Home(u)
	prepare := sandbox.PrepareWorkspace
	if project != "" {
		prepare = prepareProject
	}
	if err := prepare(dir, home, w.User); err != nil {
		log.Error().Err(err).Msg("workspace for the restore")
		return false
	}
	start := time.Now()
	found, notes, err := snapshot.Restore(ctx, w.snapshots, name, snapshot.Source{
		Dir: dir, Seen: w.seen(dir), Home: home, SessionFile: session.FileOf(project), URL: w.projectURL(ctx, u, project),
		Max: w.SnapshotMax, Owner: w.User, Command: w.restoreCommand(dir, home),
	})
	text := strings.Join(notes, "\n")
	switch {
	case err != nil:
		log.Error().Err(err).Str("snapshot", name).Msg("snapshot not restored")
		text = fmt.Sprintf(MsgRestoreFailed, contract.ProjectOf(project))
		if project != "" {
			// Not left empty: the next job tries again. (The default
			// workspace starts empty.)
			if err := os.RemoveAll(dir); err != nil {
				log.Warn().Err(err).Msg("project's directory after a failed restore")
			}
		}
	case !found:
		return project == "" // gone meanwhile: the default workspace starts empty
	default:
		log.Info().Str("snapshot", name).Dur("took_ms", time.Since(start)).Msg("workspace restored from its snapshot")
	}
	tell("restored", text)
	return err == nil || project == ""
}

// Snapshot stores the state of the workspace dir of u's project after a
// run, before its reply goes out, replacing the one before; a failure is
// logged (the earlier snapshot stays).
func (w *Workspaces) Snapshot(ctx context.Context, u contract.User, project, dir string) {
	log := *zerolog.Ctx(ctx)
	if w.snapshots == nil {
		return
	}
	if _, err := os.Lstat(dir); err != nil {
		return // a clone that failed: nothing to keep
	}
	home := w.Home(u)
	start := time.Now()
	info, err := snapshot.Take(ctx, w.snapshots, contract.SnapshotName(u, project), snapshot.Source{
		Dir: dir, Seen: w.seen(dir), Home: home, SessionFile: session.FileOf(project), URL: w.projectURL(ctx, u, project),
		Max: w.SnapshotMax, Owner: w.User, Command: w.gitCommand(dir, home),
	})
	if err != nil {
		log.Warn().Err(err).Msg("snapshot not taken; the last one stays")
		return
	}
	log.Info().Int64("size", info.Size).Int64("raw", info.Raw).Int("left_out", len(info.LeftOut)).
		Dur("took", time.Since(start)).Msg("snapshot taken")
}

// seen is dir as the agent's runs see it (snapshot.Source.Seen): in
// their sandbox, when they have one; else where its links lead.
func (w *Workspaces) seen(dir string) string {
	if w.Sandbox == nil {
		return ""
	}
	return w.Sandbox.Seen(dir)
}

// Aside is where SetAside puts old workspaces when a person's disk holds
// them (disk.Disk): there the default workspace is a link to the disk,
// which stays, and the projects are on another filesystem than
// <Root>/.stale/. SetAside moves path (the default workspace, or a
// project's directory) out of every run's sight, as name in the set of
// copies set aside now (set), and says where it went: "" when the copy
// was removed rather than kept. Once the default workspace is set aside,
// the next job for it must take it for missing and restore its snapshot.
type Aside interface {
	SetAside(path, set, name string) (to string, err error)
}

// SetAside sets aside the workspaces of u this runner kept from an
// earlier time it held them, when their projects have snapshots: another
// runner worked on them since, and the snapshots are newer. They go to
// aside, or with none (nil) to <Root>/.stale/<key>-<time>/. Called when
// this runner takes u over.
func (w *Workspaces) SetAside(ctx context.Context, u contract.User, aside Aside) {
	log := *zerolog.Ctx(ctx)
	if w.snapshots == nil {
		return
	}
	dirs := map[string]string{"": w.dir(u, "")}
	if entries, err := os.ReadDir(filepath.Join(w.Root, projectsDir, u.Key())); err == nil {
		for _, e := range entries {
			if e.IsDir() && contract.CheckProjectName(e.Name()) == nil {
				dirs[e.Name()] = w.dir(u, e.Name())
			}
		}
	}
	set := time.Now().UTC().Format("20060102T150405")
	if aside == nil {
		aside = staleAside(filepath.Join(w.Root, staleDir, u.Key()+"-"+set))
	}
	for project, dir := range dirs {
		if _, err := os.Lstat(dir); err != nil {
			continue
		}
		if _, err := w.snapshots.GetInfo(ctx, contract.SnapshotName(u, project)); err != nil {
			continue // no snapshot: this copy is all there is
		}
		to, err := aside.SetAside(dir, set, contract.ProjectOf(project))
		switch {
		case err != nil:
			log.Warn().Err(err).Str("dir", dir).Msg("old workspace not set aside; it is used as it is")
		case to == "":
			log.Warn().Str("dir", dir).Msg("old workspace removed, not set aside (the person's disk is full): the project comes back from its snapshot")
		default:
			log.Info().Str("dir", dir).Str("to", to).Msg("old workspace set aside: the project comes back from its snapshot")
		}
	}
}

// staleAside sets workspaces aside into its directory under
// <Root>/.stale/ (Aside, without a person's disk).
type staleAside string

func (s staleAside) SetAside(path, _, name string) (string, error) {
	to := filepath.Join(string(s), name)
	if err := os.MkdirAll(string(s), 0o700); err != nil {
		return "", err
	}
	return to, os.Rename(path, to)
}
