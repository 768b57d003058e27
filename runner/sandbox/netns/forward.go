package netns

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"sync"
	"time"
)

// forward opens a listener at ap inside the namespace whose connections are
// carried to ap on the host: the one way the namespace reaches the host's
// loopback.
func (n *Net) forward(ap netip.AddrPort) error {
	l, err := n.listen(ap.String())
	if err != nil {
		return fmt.Errorf("forward %s: listen in namespace: %w", ap, err)
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		l.Close()
		return ErrClosed
	}
	n.listeners = append(n.listeners, l)
	n.wg.Add(1)
	n.mu.Unlock()
	go n.serveForward(l, ap.String())
	return nil
}

// serveForward accepts the namespace's connections to a forwarded address
// and carries each to the host's address, until the listener is closed.
func (n *Net) serveForward(l net.Listener, target string) {
	defer n.wg.Done()
	log := n.log.With().Str("forward", target).Logger()
	for {
		in, err := l.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				log.Error().Err(err).Msg("netns: forward stopped accepting")
			}
			return
		}
		go func() {
			// This goroutine's thread is in the host's namespace: the
			// dial reaches the host's loopback.
			out, err := net.DialTimeout("tcp", target, dialTimeout)
			if err != nil {
				log.Warn().Err(err).Str("from", in.RemoteAddr().String()).Msg("netns: forward could not reach the host's address")
				in.Close()
				return
			}
			n.conns.pipe(in, out)
		}()
	}
}

// conns are the connections this package carries (forwards, CONNECT
// tunnels): closeAll closes them and waits for their pipes to end; a pipe
// started after it closes its connections at once.
type conns struct {
	mu     sync.Mutex
	closed bool
	m      map[net.Conn]struct{}
	wg     sync.WaitGroup
}

func newConns() *conns { return &conns{m: map[net.Conn]struct{}{}} }

func (c *conns) add(a, b net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.m[a], c.m[b] = struct{}{}, struct{}{}
	c.wg.Add(1)
	return true
}

func (c *conns) remove(a, b net.Conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, a)
	delete(c.m, b)
	c.wg.Done()
}

func (c *conns) closeAll() {
	c.mu.Lock()
	c.closed = true
	for x := range c.m {
		x.Close()
	}
	c.mu.Unlock()
	c.wg.Wait()
}

// pipe copies a to b and b to a until both directions end, passing each
// end of stream on as a half-close, then closes both.
func (c *conns) pipe(a, b net.Conn) {
	defer a.Close()
	defer b.Close()
	if !c.add(a, b) {
		return
	}
	defer c.remove(a, b)
	done := make(chan struct{})
	go func() {
		copyHalf(b, a)
		close(done)
	}()
	copyHalf(a, b)
	<-done
}

// copyHalf copies src to dst, then tells dst no more is coming.
func copyHalf(dst, src net.Conn) {
	_, err := io.Copy(dst, src)
	if cw, ok := dst.(interface{ CloseWrite() error }); ok && err == nil {
		cw.CloseWrite()
		return
	}
	// An error one way ends both: unblock the other copy.
	dst.SetDeadline(time.Now())
	src.SetDeadline(time.Now())
}

// LoopbackAddr is the ip:port of URL raw when its host is a loopback
// address or localhost, else "": an address a home reaches only when
// forwarded (Options.Forward).
func LoopbackAddr(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if host == "localhost" {
		host = "127.0.0.1"
	}
	if ip, err := netip.ParseAddr(host); err != nil || !ip.IsLoopback() || port == "" {
		return ""
	}
	return net.JoinHostPort(host, port)
}
