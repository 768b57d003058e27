package agent

import (
	"encoding/json"
	"io"
	"sync"
)

// claudeInput is the CLI's stdin: one JSON object per line, written one at
// a time, until the run's first result closes it (or, for a warm CLI,
// until its Warm is closed).
type claudeInput struct {
	w      io.WriteCloser
	mu     sync.Mutex
	closed bool
	quit   chan struct{} // closed with stdin
}

// send writes v as a line; it reports false once stdin is closed.
func (in *claudeInput) send(v any) bool {
	b, err := json.Marshal(v)
	if err != nil || in == nil {
		return false
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed {
		return false
	}
	_, err = in.w.Write(append(b, '\n'))
	return err == nil
}

// initialize opens the control protocol: the first line a CLI is sent.
func (in *claudeInput) initialize() bool {
	return in.send(map[string]any{"type": "control_request", "request_id": "init", "request": map[string]any{"subtype": "initialize"}})
}

// interrupt asks the CLI to stop its turn, which then ends with a result.
func (in *claudeInput) interrupt(id string) bool {
	return in.send(map[string]any{"type": "control_request", "request_id": id, "request": map[string]any{"subtype": "interrupt"}})
}

// user sends the person's text as a user message.
func (in *claudeInput) user(text string) bool {
	return in.send(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}})
}

// steer hands the messages the person adds to the run to Claude, which
// sees them at its next step, until stop closes (the run's turn ended) or
// stdin does; later ones stay in the channel for the runner to report.
func (in *claudeInput) steer(steers <-chan string, stop <-chan struct{}) {
	if steers == nil {
		return
	}
	for {
		select {
		case <-stop:
			return
		case <-in.quit:
			return
		default:
		}
		select {
		case text := <-steers:
			if !in.user(text) {
				return // lost the race with the end of the run
			}
		case <-stop:
			return
		case <-in.quit:
			return
		}
	}
}

// close ends stdin: the CLI finishes what it was given and exits.
func (in *claudeInput) close() {
	if in == nil {
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.closed {
		in.closed = true
		_ = in.w.Close()
		close(in.quit)
	}
}
