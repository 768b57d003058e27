package netns

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Everything this package does inside a namespace (connect, listen, ask
// whether the loopback is up, add a route) starts with a socket made
// there: a socket belongs to the namespace it was made in for its whole
// life, whichever process or thread then uses it. So a namespace is
// reached through one call, sockets.socket, which has two ways in.
//
// As root (CAP_SYS_ADMIN), a thread of this process enters the namespace
// (setns), makes the socket and comes back: setnsSockets.
//
// Without it, this process may not enter: setns of a network namespace
// needs CAP_SYS_ADMIN in the caller's own user namespace too. And an
// unprivileged bubblewrap nests its user namespaces: the network
// namespace belongs to the outer one, in which bubblewrap's user is root,
// while the home's programs are in an inner one without power over it. A
// helper (this same binary, started by nsenter in the outer user namespace
// and the network namespace) makes the sockets and passes them back over a
// socket pair: helperSockets. It is root of the outer user namespace,
// which no program of the home can reach (they are in the inner one: a
// helper with more capabilities than they have cannot be traced or
// signalled from there, and its pid is outside their pid namespace). The
// kernel checks a route's change against the capabilities of the process
// that made the netlink socket as well as of the one writing to it: the
// helper has CAP_NET_ADMIN there, and this process, which owns the outer
// user namespace, has it there too.
type sockets interface {
	// socket is socket(2) in the namespace, close-on-exec.
	socket(domain, typ, proto int) (int, error)
	close() error
}

// privileged reports whether this process may enter network namespaces
// itself (CAP_SYS_ADMIN, as root has).
func privileged() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[0].Effective&(1<<unix.CAP_SYS_ADMIN) != 0
}

// setnsSockets makes sockets from a thread of this process put in the
// namespace ns for the call.
type setnsSockets struct{ ns *os.File }

func (s setnsSockets) socket(domain, typ, proto int) (int, error) {
	fd := -1
	err := inside(s.ns, func() error {
		var err error
		fd, err = unix.Socket(domain, typ|unix.SOCK_CLOEXEC, proto)
		return err
	})
	return fd, err
}

func (setnsSockets) close() error { return nil }

// inside runs fn with its OS thread in the namespace ns and returns once fn
// has. fn runs on a goroutine of its own, locked to its thread: if the
// thread cannot return to the host's namespace, it stays locked and ends
// with that goroutine, so no other goroutine ever runs in the namespace by
// accident.
func inside(ns *os.File, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		host, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("open own network namespace: %w", err)
			return
		}
		defer host.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("enter network namespace: %w", err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(host.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("leave network namespace (the thread ends with its goroutine): %w", err))
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// helperEnv, set to 1 in the helper's environment (and only there), makes
// this binary the helper as soon as it starts (init below): any binary
// importing this package can be started as one, textslash, the runner's
// own and a test binary alike.
const helperEnv = "TEXTSLASH_NETNS_SOCKETS"

// The helper's file descriptors: its end of the socket pair, and the
// namespaces nsenter entered by them.
const (
	helperConn   = 3
	helperUserNS = 4
	helperNetNS  = 5
)

func init() {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(serveSockets(helperConn))
	}
}

// A request is three int32s (domain, type, protocol); its answer an int32
// errno, 0 with the socket passed alongside (SCM_RIGHTS).
const reqSize = 12

// serveSockets answers requests on fd until the other end closes it. It
// makes sockets of the Internet and of netlink only: nothing else is asked
// for.
func serveSockets(fd int) int {
	unix.Close(helperUserNS)
	unix.Close(helperNetNS)
	req := make([]byte, reqSize)
	for {
		n, _, _, _, err := unix.Recvmsg(fd, req, nil, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			return 0 // the runner is gone
		}
		if n != reqSize {
			fmt.Fprintf(os.Stderr, "netns helper: a request of %d bytes\n", n)
			return 2
		}
		domain := int(int32(binary.NativeEndian.Uint32(req[0:])))
		typ := int(int32(binary.NativeEndian.Uint32(req[4:])))
		proto := int(int32(binary.NativeEndian.Uint32(req[8:])))
		s, serr := -1, error(unix.EAFNOSUPPORT)
		if domain == unix.AF_INET || domain == unix.AF_INET6 || domain == unix.AF_NETLINK {
			s, serr = unix.Socket(domain, typ|unix.SOCK_CLOEXEC, proto)
		}
		answer := make([]byte, 4)
		var rights []byte
		if serr != nil {
			var errno unix.Errno
			if !errors.As(serr, &errno) {
				errno = unix.EINVAL
			}
			binary.NativeEndian.PutUint32(answer, uint32(errno))
		} else {
			rights = unix.UnixRights(s)
		}
		err = unix.Sendmsg(fd, answer, rights, nil, 0)
		if s >= 0 {
			unix.Close(s)
		}
		if err != nil {
			return 0
		}
	}
}

// helperSockets asks a helper in the namespace for its sockets.
type helperSockets struct {
	cmd  *exec.Cmd
	errb *tail // the helper's complaints
	done chan struct{}

	mu   sync.Mutex // one request at a time
	conn *os.File
}

// startHelper starts the helper in the network namespace netNS, entered
// through the user namespace owning it, userNS.
func startHelper(userNS, netNS *os.File) (*helperSockets, error) {
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return nil, fmt.Errorf("%w: nsenter not found (util-linux)", ErrUnavailable)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("netns helper: %w", err)
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("netns helper: socket pair: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), "netns-helper"), os.NewFile(uintptr(pair[1]), "netns-helper")
	defer theirs.Close()
	// Root of the user namespace (nsenter's default credentials would
	// also set the groups, which bubblewrap's user namespace denies):
	// this process's uid is the one mapped to 0 there.
	cmd := exec.Command(nsenter, fmt.Sprintf("--user=/proc/self/fd/%d", helperUserNS),
		fmt.Sprintf("--net=/proc/self/fd/%d", helperNetNS), "--preserve-credentials", "--", exe)
	cmd.ExtraFiles = []*os.File{theirs, userNS, netNS}
	cmd.Env = []string{helperEnv + "=1"}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	h := &helperSockets{cmd: cmd, errb: &tail{max: 4096}, done: make(chan struct{}), conn: ours}
	cmd.Stderr, cmd.Stdout = h.errb, h.errb
	if err := cmd.Start(); err != nil {
		ours.Close()
		return nil, fmt.Errorf("netns helper: start: %w", err)
	}
	go func() { _ = cmd.Wait(); close(h.done) }()
	return h, nil
}

func (h *helperSockets) socket(domain, typ, proto int) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	req := make([]byte, reqSize)
	binary.NativeEndian.PutUint32(req[0:], uint32(int32(domain)))
	binary.NativeEndian.PutUint32(req[4:], uint32(int32(typ)))
	binary.NativeEndian.PutUint32(req[8:], uint32(int32(proto)))
	fd := int(h.conn.Fd())
	if err := unix.Sendmsg(fd, req, nil, nil, 0); err != nil {
		return -1, h.failed(err)
	}
	answer := make([]byte, 4)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(fd, answer, oob, unix.MSG_CMSG_CLOEXEC)
	for errors.Is(err, unix.EINTR) {
		n, oobn, _, _, err = unix.Recvmsg(fd, answer, oob, unix.MSG_CMSG_CLOEXEC)
	}
	if err != nil || n != len(answer) {
		return -1, h.failed(err)
	}
	if errno := unix.Errno(binary.NativeEndian.Uint32(answer)); errno != 0 {
		return -1, errno
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return -1, h.failed(err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return -1, h.failed(err)
	}
	return fds[0], nil
}

// failed is the error of a request the helper did not answer.
func (h *helperSockets) failed(err error) error {
	select {
	case <-h.done:
		return fmt.Errorf("netns helper ended: %v: %s", h.cmd.ProcessState, h.errb)
	default:
		return fmt.Errorf("netns helper: %v", err)
	}
}

// close ends the helper: it ends at the end of its socket pair.
func (h *helperSockets) close() error {
	h.mu.Lock()
	err := h.conn.Close()
	h.mu.Unlock()
	select {
	case <-h.done:
	case <-time.After(stopWait):
		_ = h.cmd.Process.Kill()
		<-h.done
	}
	return err
}
