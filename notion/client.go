// Package notion is a small client of Notion's public REST API: the calls
// textslash makes to take tasks from a Notion database and report back on
// them (find a database's data source, query its pages by status, read a
// page's text, set a page's status, comment on a page with attached files).
//
// It is written by hand on net/http because no well-kept Go library covers
// Notion's file uploads and comment attachments. Every call carries the
// Notion-Version header Version, is paced by a client-side rate limit of
// about three requests a second (Notion's documented average), and retries
// what retrying can fix: 429 after its Retry-After, 5xx and network errors
// with backoff, within Client.MaxWait.
//
// The fake in package notiontest answers these calls in tests.
package notion

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Version is the Notion-Version header every request carries: the API
// version whose shapes this package reads and writes (databases hold data
// sources, and pages are queried through their data source).
const Version = "2025-09-03"

// Defaults of a Client's zero fields.
const (
	DefaultBaseURL = "https://api.notion.com"
	defaultTimeout = 30 * time.Second
	defaultMaxWait = 2 * time.Minute
)

// Backoff between retries of 5xx answers and network errors: it starts at
// backoffStart, doubles each attempt up to backoffCap, and is jittered.
const (
	backoffStart = 500 * time.Millisecond
	backoffCap   = 10 * time.Second
)

// Client-side pacing: Notion allows an average of three requests a second
// per integration, with some bursts; staying under it avoids most 429s.
const (
	rateLimit = 3
	rateBurst = 3
)

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// Client talks to one Notion integration. Its zero value, with Token set,
// is ready to use; it must not be copied after its first call (its rate
// limiter is shared by all its calls).
type Client struct {
	BaseURL string       // default "https://api.notion.com" (tests point it at the fake)
	Token   string       // the integration's secret: Authorization: Bearer <Token>
	HTTP    *http.Client // default: a client with a 30s timeout
	// MaxWait caps how long one call keeps retrying 429s, 5xx and network
	// errors (default 2 minutes).
	MaxWait time.Duration

	once    sync.Once
	limiter *rate.Limiter // shared by all calls of this Client
	http    *http.Client  // HTTP, or the default
}

// init fills in what the zero Client lacks, once.
func (c *Client) init() {
	c.once.Do(func() {
		c.limiter = rate.NewLimiter(rateLimit, rateBurst)
		c.http = c.HTTP
		if c.http == nil {
			c.http = &http.Client{Timeout: defaultTimeout}
		}
	})
}

func (c *Client) baseURL() string {
	if c.BaseURL == "" {
		return DefaultBaseURL
	}
	return strings.TrimRight(c.BaseURL, "/")
}

func (c *Client) maxWait() time.Duration {
	if c.MaxWait <= 0 {
		return defaultMaxWait
	}
	return c.MaxWait
}

// request is one API call: sent again whole on each attempt.
type request struct {
	method      string
	path        string // from "/v1/…", with any query string
	body        []byte // nil: no body
	contentType string // of body
}

// jsonRequest is a request whose body is v as JSON (no body if v is nil).
func jsonRequest(method, path string, v any) (request, error) {
	r := request{method: method, path: path}
	if v == nil {
		return r, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return r, fmt.Errorf("%s %s: encode body: %w", method, path, err)
	}
	r.body, r.contentType = b, "application/json"
	return r, nil
}

// callJSON makes a call with v as its JSON body (none if nil) and decodes the
// answer into out (unless nil).
func (c *Client) callJSON(ctx context.Context, method, path string, v, out any) error {
	r, err := jsonRequest(method, path, v)
	if err != nil {
		return err
	}
	return c.call(ctx, r, out)
}

// call sends r until Notion answers something retrying cannot change, or
// until MaxWait or ctx runs out, and decodes a 2xx answer into out (unless
// nil). A 429 waits its Retry-After; a 5xx or network error backs off.
func (c *Client) call(ctx context.Context, r request, out any) error {
	c.init()
	deadline := time.Now().Add(c.maxWait())
	for attempt := 1; ; attempt++ {
		wait, err := c.attempt(ctx, r, out)
		if wait < 0 {
			return r.fail(err, "")
		}
		if wait == 0 {
			wait = backoff(attempt)
		}
		if time.Now().Add(wait).After(deadline) {
			return r.fail(err, fmt.Sprintf("; gave up after %d attempts within %v", attempt, c.maxWait()))
		}
		if serr := sleep(ctx, wait); serr != nil {
			return r.fail(fmt.Errorf("%w while retrying after: %w", serr, err), "")
		}
	}
}

// fail says which call err (nil: none) comes from: Notion's answers read
// "404 object_not_found: … (GET /v1/pages/…)", other errors
// "GET /v1/pages/…: …". The exported methods add "notion: " and what
// they were doing.
func (r request) fail(err error, note string) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return fmt.Errorf("%w (%s %s%s)", err, r.method, r.path, note)
	}
	return fmt.Errorf("%s %s%s: %w", r.method, r.path, note, err)
}

// attempt sends r once. It returns wait < 0 when done (err is the result,
// nil on success), or how long to wait before the next attempt (0: back
// off) and the error that makes one worth it.
func (c *Client) attempt(ctx context.Context, r request, out any) (time.Duration, error) {
	if err := c.limiter.Wait(ctx); err != nil {
		return -1, err
	}
	req, err := c.newRequest(ctx, r)
	if err != nil {
		return -1, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() == nil && retryableNetError(err) {
			return 0, err
		}
		return -1, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		return -1, decode(resp, out)
	}
	apiErr := readError(resp)
	switch resp.StatusCode {
	case http.StatusTooManyRequests, 529: // 529: service_overload, also with Retry-After
		return retryAfter(resp.Header.Get("Retry-After")), apiErr
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return 0, apiErr
	}
	return -1, apiErr
}

// newRequest builds the HTTP request of r with Notion's headers.
func (c *Client) newRequest(ctx context.Context, r request) (*http.Request, error) {
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, c.baseURL()+r.path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set("Notion-Version", Version)
	req.Header.Set("Accept", "application/json")
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	return req, nil
}

// decode reads a 2xx answer into out.
func decode(resp *http.Response, out any) error {
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	return nil
}

// readError reads Notion's error answer; one that is not Notion's JSON (a
// proxy's page, say) keeps the HTTP status and its text.
func readError(resp *http.Response) *Error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var body struct {
		Object  string `json:"object"`
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(b, &body) == nil && body.Object == "error" {
		return &Error{Status: resp.StatusCode, Code: body.Code, Message: body.Message}
	}
	msg := strings.TrimSpace(string(b))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return &Error{Status: resp.StatusCode, Code: "http_" + strconv.Itoa(resp.StatusCode), Message: msg}
}

// retryAfter is the wait a Retry-After header asks for: an integer number
// of seconds, as Notion sends it. A missing or unreadable one means back
// off instead (0); Retry-After: 0 still waits a moment, not a busy loop.
func retryAfter(h string) time.Duration {
	secs, err := strconv.Atoi(strings.TrimSpace(h))
	if err != nil || secs < 0 {
		return 0
	}
	if secs == 0 {
		return 100 * time.Millisecond
	}
	return time.Duration(secs) * time.Second
}

// backoff is the wait after failed attempt number attempt (from 1) of a
// 5xx or network error: exponential from backoffStart, capped at
// backoffCap, with "equal jitter" (half fixed, half random) so that clients
// failing together do not retry together.
func backoff(attempt int) time.Duration {
	d := backoffStart << min(attempt-1, 10)
	d = min(d, backoffCap)
	return d/2 + rand.N(d/2+1)
}

// retryableNetError reports whether err, from http.Client.Do, is the
// network failing (refused, reset, timed out, closed early), which a later
// attempt may get through, rather than a request that can never be sent
// (a bad URL, say).
func retryableNetError(err error) bool {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return false
	}
	var ne net.Error
	return errors.As(ue.Err, &ne) || errors.Is(ue.Err, io.EOF) || errors.Is(ue.Err, io.ErrUnexpectedEOF)
}

// sleep waits d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
