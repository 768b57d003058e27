package discordtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"
)

// bucket is one rate limit: a route's, per channel for channel routes
// (Discord's top-level resource).
type bucket struct {
	remaining int
	reset     time.Time
	told      bool // a 429 gave the client the reset
}

// limit counts a request against its route's bucket and sets the
// X-RateLimit-* headers Discord sends (topics/rate-limits#header-format):
// 0 when the request may go on, else 429 and its body, with Retry-After.
// A 429 set with RateLimit comes first. A request on a bucket before the
// reset a 429 gave is counted (Early): the client did not honour it.
func (s *Server) limit(w http.ResponseWriter, route, major string) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	b := s.limits[route+"|"+major]
	if b == nil || !now.Before(b.reset) {
		b = &bucket{remaining: s.opts.Limit, reset: now.Add(s.opts.Window)}
		s.limits[route+"|"+major] = b
	}
	if b.told && now.Before(b.reset) {
		s.early++
	}
	var wait time.Duration
	switch forced := s.tooMany[route]; {
	case len(forced) > 0:
		wait, s.tooMany[route] = forced[0], forced[1:]
		b.remaining, b.reset = 0, now.Add(wait)
	case b.remaining == 0:
		wait = b.reset.Sub(now)
	default:
		b.remaining--
	}
	h := w.Header()
	sum := sha256.Sum256([]byte(route))
	h.Set("X-RateLimit-Bucket", hex.EncodeToString(sum[:8]))
	h.Set("X-RateLimit-Limit", strconv.Itoa(s.opts.Limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(b.remaining))
	h.Set("X-RateLimit-Reset", fmt.Sprintf("%.3f", float64(b.reset.UnixMilli())/1000))
	h.Set("X-RateLimit-Reset-After", fmt.Sprintf("%.3f", b.reset.Sub(now).Seconds()))
	if wait == 0 {
		return 0, nil
	}
	b.told = true
	h.Set("X-RateLimit-Scope", "user")
	h.Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
	return http.StatusTooManyRequests, map[string]any{
		"message": "You are being rate limited.", "retry_after": math.Round(wait.Seconds()*1000) / 1000, "global": false,
	}
}

// Early is how many requests came on a bucket before the reset a 429 had
// given: 0 when the client honoured every 429.
func (s *Server) Early() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.early
}
