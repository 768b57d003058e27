package netns

import "errors"

// ErrUnavailable means homes cannot have a network of their own here:
// slirp4netns is missing or this process may not enter namespaces. The
// error wrapping it says which, and what to install.
var ErrUnavailable = errors.New("no user-mode networking for homes")

// ErrHostNamespace means the pid given to Attach shares this process's
// network namespace: configuring it would put slirp4netns's interface and
// default route on the host.
var ErrHostNamespace = errors.New("process is in the host's network namespace")

// ErrClosed means the Net was closed.
var ErrClosed = errors.New("network closed")

// ErrForward means an address in Options.Forward is not a host loopback
// address with a port ("127.0.0.1:PORT").
var ErrForward = errors.New("forward must be a loopback address with a port")
