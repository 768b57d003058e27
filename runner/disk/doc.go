// Package disk bounds what each person keeps on a runner's disk: their
// workspace, their projects, their worktrees and their agent's home held
// together on a disk of their own, a sparse ext4 image file the size of
// the quota, loop-mounted by the runner (Disks.Mount). A write past the
// quota fails inside the run with ENOSPC, as on any full disk, and
// touches nothing else of the host; Disk.Usage tells the runner the disk
// is full, to say so to the person.
//
// Why an image per person: the kernel's own quotas count per user or per
// project, and textslash's agents all run as one user; project quotas
// need the filesystem mounted with prjquota (this machine's ext4 root
// is not, and a container's volume never is); RLIMIT_FSIZE bounds one
// file of one process, not what a person keeps. An image needs root (or
// CAP_SYS_ADMIN and the loop devices) and e2fsprogs' mkfs.ext4 and
// resize2fs; where that is missing Open says so (ErrUnsupported) and the
// runner runs without bounds, saying so in its log.
//
// Layout under the directory given to Open (<workspaces>/.disks, which
// the runs' user may pass but not list): the image <id>.img and its mount
// point <id>/, named by an opaque random id (a loop device's backing file
// shows in /sys, and every mount in every sandbox's mountinfo), and
// people/<key> holding the id of each person's key. The places the
// runner uses (one per Bind) are relative links to the disk's
// directories (workspace/, projects/, worktrees/, home/), so the runner's
// own file operations need not change; what was already there is moved
// in the first time. Links, not bind mounts: every sandbox copies the
// runner's mount table whole, and a mount at <workspaces>/<key> would
// name the person in all of them. A sandbox binds where the links lead
// onto the person's places inside itself alone (package sandbox), and
// Open unmounts the binds an older runner made at people's places
// (links.go).
// Old copies of the person's workspaces, set aside when the runner takes
// the person over from another (Disk.SetAside), are kept beside those
// directories, in stale/: out of every run's sight, in the person's
// quota, one set at a time, dropped when the disk is full (DropStale).
//
// Loop devices are set up with the kernel's LOOP_CTL_GET_FREE and
// LOOP_CONFIGURE ioctls (golang.org/x/sys/unix), with autoclear: the
// device is released when its filesystem is unmounted, and a runner
// killed between attaching and mounting leaves none behind. Mounts
// outlive a runner killed with SIGKILL; the next one finds them and uses
// them as they are. Close unmounts everything at a clean stop.
package disk
