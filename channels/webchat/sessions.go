package webchat

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// SessionLimit bounds how many web chat sessions one client address may
// start: Burst at once, then one per Every.
type SessionLimit struct {
	Burst int
	Every time.Duration
}

// sessionLimiter keeps one token bucket per client address. Addresses
// idle long enough to have a full bucket again are forgotten, so the map
// holds only recent ones.
type sessionLimiter struct {
	limit SessionLimit
	mu    sync.Mutex
	by    map[string]*rate.Limiter
	swept time.Time
}

func newSessionLimiter(l SessionLimit) *sessionLimiter {
	return &sessionLimiter{limit: l, by: map[string]*rate.Limiter{}}
}

// allow takes one new session from ip's bucket.
func (s *sessionLimiter) allow(ip string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if now.Sub(s.swept) > time.Minute {
		for k, l := range s.by {
			if l.TokensAt(now) >= float64(s.limit.Burst) {
				delete(s.by, k)
			}
		}
		s.swept = now
	}
	l := s.by[ip]
	if l == nil {
		l = rate.NewLimiter(rate.Every(s.limit.Every), s.limit.Burst)
		s.by[ip] = l
	}
	return l.AllowN(now, 1)
}

// clientIP is the address r came from (a proxy's or tunnel's when there
// is one: behind them the web chat wants its token anyway).
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

type operatorKey struct{}

// Operator marks r as the operator's: it carried the web chat's token. A
// session it opens is not taken from its address's bucket, so anonymous
// clients of the same address (an agent's scripts on this machine, every
// client behind one tunnel) cannot lock the operator out.
func Operator(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), operatorKey{}, true))
}

// operator reports whether Operator marked r.
func operator(r *http.Request) bool {
	ok, _ := r.Context().Value(operatorKey{}).(bool)
	return ok
}
