package runner

import (
	"context"
	"math"
	"path/filepath"

	"github.com/textslash/textslash/runner/disk"
	"github.com/textslash/textslash/runner/sandbox"
)

// The people's disks (package disk): opened at start, each mounted for
// its person's runs (mountDisk) and swept when nothing of theirs runs.

// disksDir, under the workspaces, holds the people's disks.
const disksDir = ".disks"

// openDisks readies each person's disk of DiskQuota bytes, or says loudly
// why disks are not bounded here.
func (r *Runner) openDisks() {
	q := r.cfg.DiskQuota
	if q == 0 {
		r.conf.Disk.Why = "no quota is set (TEXTSLASH_DISK_QUOTA=0)"
		return
	}
	d, err := disk.Open(r.log.WithContext(context.Background()), filepath.Join(r.cfg.Workspaces, disksDir), q)
	if err != nil {
		r.conf.Disk.Why = err.Error()
		r.log.Error().Err(err).Int64("quota", q).Msg("disks are NOT bounded (TEXTSLASH_DISK_QUOTA): textslash cannot mount a disk per person here; run it as root (or with CAP_SYS_ADMIN) with the loop devices (/dev/loop-control) and e2fsprogs")
		return
	}
	r.disks = d
	r.conf.Disk.On = true
	r.log.Info().Int64("quota", q).Str("size", sandbox.BytesText(q)).Msg("each person's disk bounded: workspace, projects, worktrees and home together, on an ext4 image of their own")
}

// sweepDisks unmounts the disks of people with no run and no home: those
// unused for HomeIdle, and past as many as homes are kept the least
// recently used.
func (r *Runner) sweepDisks() {
	if r.disks == nil {
		return
	}
	max := r.cfg.HomesMax
	if max <= 0 {
		max = math.MaxInt32 // homes bounded by memory: disks by idle time
	}
	r.disks.Sweep(r.cfg.HomeIdle, max, r.hasHome)
}

// closeDisks unmounts the people's disks, at the runner's end.
func (r *Runner) closeDisks() {
	if r.disks == nil {
		return
	}
	if err := r.disks.Close(); err != nil {
		r.log.Error().Err(err).Msg("people's disks not all unmounted")
	}
}
