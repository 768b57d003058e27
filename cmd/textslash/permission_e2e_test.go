package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/runner/claudetest"
	"github.com/textslash/textslash/twiliotest"
)

// The real Claude Code CLI in ask mode (the default), over WhatsApp: each
// command it wants to run reaches the person's phone as a question first.
// No (with a reason) keeps it from running and tells the model why; yes
// runs it; always runs it and the same command again without asking.
func TestAskOverWhatsApp(t *testing.T) {
	model := claudetest.NewModel(t,
		claudetest.ToolUse("Bash", map[string]any{"command": "echo one > one.txt"}),
		claudetest.Text("Understood: not doing that."),
		claudetest.ToolUse("Bash", map[string]any{"command": "echo two > two.txt"}),
		claudetest.Text("Made two."),
		claudetest.ToolUse("Bash", map[string]any{"command": "echo three >> three.txt"}),
		claudetest.ToolUse("Bash", map[string]any{"command": "echo three >> three.txt"}),
		claudetest.Text("Made three twice."),
	)
	s := startTwilioServe(t, claudeEnv(t, model)...)
	ws := filepath.Join(s.Data, "workspaces", "whatsapp."+phoneAlice[1:])
	from := "whatsapp:" + phoneAlice

	s.webhook(t, from, "make one", nil)
	q := waitBody(t, s.api, "Claude wants to run `echo one > one.txt` in your workspace. "+contract.QuestionPrompt)
	s.webhook(t, from, "status", nil)
	if st := waitBody(t, s.api, "Claude is waiting for your answer"); !strings.Contains(st.Body, q.Body) {
		t.Errorf("status %q; want it to repeat the question %q", st.Body, q.Body)
	}
	s.webhook(t, from, "no, use pnpm", nil)
	// The reply names the question it answered.
	waitBody(t, s.api, "Your reply answered: Claude wants to run `echo one > one.txt` in your workspace.\nDenied, and Claude was told: use pnpm")
	waitBody(t, s.api, "Understood: not doing that.")
	if _, err := os.Stat(filepath.Join(ws, "one.txt")); !os.IsNotExist(err) {
		t.Errorf("one.txt: %v; want it never written (denied)", err)
	}
	if res := model.MainRequests()[1].ToolResults(); len(res) != 1 || !res[0].IsError || !strings.Contains(res[0].ResultText(), "use pnpm") {
		t.Errorf("the model's request after the denial carries %+v; want an error tool result with the person's reason", res)
	}

	s.webhook(t, from, "make two", nil)
	waitBody(t, s.api, "Claude wants to run `echo two > two.txt`")
	s.webhook(t, from, "yes", nil)
	waitBody(t, s.api, "Made two.")
	if b, err := os.ReadFile(filepath.Join(ws, "two.txt")); err != nil || string(b) != "two\n" {
		t.Errorf("two.txt = %q, %v; want two (allowed)", b, err)
	}

	s.webhook(t, from, "make three", nil)
	waitBody(t, s.api, "Claude wants to run `echo three >> three.txt`")
	s.webhook(t, from, "always", nil)
	waitBody(t, s.api, "Made three twice.")
	if b, err := os.ReadFile(filepath.Join(ws, "three.txt")); err != nil || string(b) != "three\nthree\n" {
		t.Errorf("three.txt = %q, %v; want two lines (both calls ran)", b, err)
	}
	asked := 0
	for _, m := range s.api.Messages() {
		if strings.Contains(m.Body, "echo three") {
			asked++
		}
	}
	if asked != 1 {
		t.Errorf("asked %d times about echo three; want once (always)", asked)
	}
}

// claudeEnv runs the real Claude Code CLI against model, as the agent
// user, in the default mode (ask).
func claudeEnv(t *testing.T, model *claudetest.Model) []string {
	t.Helper()
	env := append([]string{"TEXTSLASH_AGENT=claude", "TEXTSLASH_CLAUDE_BIN=" + claudetest.Binary(t)}, claudetest.Env(model)...)
	if u := claudetest.AgentUser(t); u != "" {
		env = append(env, "TEXTSLASH_AGENT_USER="+u)
	}
	return env
}

// waitBody waits for a message to the phone containing text.
func waitBody(t *testing.T, api *twiliotest.API, text string) twiliotest.Message {
	t.Helper()
	var found twiliotest.Message
	natstest.CheckFor(t, 90*time.Second, 20*time.Millisecond, func() error {
		msgs := api.Messages()
		for _, m := range msgs {
			if strings.Contains(m.Body, text) {
				found = m
				return nil
			}
		}
		return fmt.Errorf("no message containing %q; sent %q", text, sentBodies(msgs))
	})
	return found
}

// notice waits for a notice of textslash's containing text.
func notice(t *testing.T, events <-chan sseEvent, text string) contract.Event {
	t.Helper()
	return waitFor(t, events, 90*time.Second, func(ev sseEvent) bool {
		return ev.Kind == string(contract.KindNotice) && strings.Contains(ev.Event.Text, text)
	}).Event
}

// question waits for a question from the agent.
func question(t *testing.T, events <-chan sseEvent) contract.Event {
	t.Helper()
	return waitFor(t, events, 90*time.Second, func(ev sseEvent) bool { return ev.Kind == string(contract.KindQuestion) }).Event
}

// A question nobody answers is denied after TEXTSLASH_PERMISSION_TIMEOUT:
// the person is told, and so is the model.
func TestAskTimeout(t *testing.T) {
	model := claudetest.NewModel(t,
		claudetest.ToolUse("Bash", map[string]any{"command": "echo four > four.txt"}),
		claudetest.Text("Nobody answered, so I stopped."),
	)
	inst := startClaude(t, model, "TEXTSLASH_DEFAULT_MODE=ask", "TEXTSLASH_PERMISSION_TIMEOUT=2s")
	c := inst.newChat(t)
	events := c.events(t.Context())
	id := c.send("make four")
	q := question(t, events)
	if q.JobID != id || q.Question != 1 || strings.Join(q.Choices, ",") != "yes,no,always" {
		t.Errorf("question %+v; want question 1 of %s with choices yes, no, always", q, id)
	}
	notice(t, events, "No answer in 2 seconds, so Claude was told no.")
	if done := waitFor(t, events, 90*time.Second, func(ev sseEvent) bool { return ev.Kind == "done" }); done.Event.Text != "Nobody answered, so I stopped." {
		t.Errorf("reply %q", done.Event.Text)
	}
	if res := model.MainRequests()[1].ToolResults(); len(res) != 1 || !res[0].IsError || !strings.Contains(res[0].ResultText(), "did not answer in time") {
		t.Errorf("the model's request after the timeout carries %+v; want the denial", res)
	}
	if _, err := os.Stat(filepath.Join(inst.Data, "workspaces", c.User.Key(), "four.txt")); !os.IsNotExist(err) {
		t.Errorf("four.txt: %v; want it never written", err)
	}
}

// cancel while a question waits ends the run and its whole process tree
// at once.
func TestAskCancel(t *testing.T) {
	model := claudetest.NewModel(t,
		claudetest.ToolUse("Bash", map[string]any{"command": "echo five > five.txt"}),
		claudetest.Text("never said"),
	)
	inst := startClaude(t, model, "TEXTSLASH_DEFAULT_MODE=ask")
	c := inst.newChat(t)
	events := c.events(t.Context())
	c.send("make five")
	question(t, events)
	ws := filepath.Join(inst.Data, "workspaces", c.User.Key())
	if len(procsIn(t, ws)) == 0 {
		t.Fatal("no process runs in the workspace while the question waits")
	}
	start := time.Now()
	c.send("cancel")
	done := waitFor(t, events, 30*time.Second, func(ev sseEvent) bool { return ev.Kind == "done" })
	took := time.Since(start)
	if done.Event.Status != contract.StatusCanceled {
		t.Errorf("done %q (%s); want canceled", done.Event.Text, done.Event.Status)
	}
	// All but the agent kept warm in the person's home: cancel ends the
	// run's processes, not the home.
	var left []int
	for _, pid := range procsIn(t, ws) {
		if !procAlive(pid, "claude", "claude.exe", "nsenter") {
			left = append(left, pid)
		}
	}
	if len(left) > 0 {
		var names []string
		for _, pid := range left {
			comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			names = append(names, fmt.Sprintf("%d %s", pid, strings.TrimSpace(string(comm))))
		}
		t.Errorf("processes %v still run in the workspace after the cancel", names)
	}
	t.Logf("cancel while asking: run over, its processes gone, after %v", took)
	c.send("status")
	notice(t, events, "Idle")
}

// procsIn lists the processes whose working directory is dir.
func procsIn(t *testing.T, dir string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err == nil && cwd == dir {
			out = append(out, pid)
		}
	}
	return out
}

// textslash killed while a question waits: after the restart the run is
// reported interrupted (never a silent hang), and the person is free again.
func TestAskRunnerKilled(t *testing.T) {
	model := claudetest.NewModel(t,
		claudetest.ToolUse("Bash", map[string]any{"command": "echo six > six.txt"}),
		claudetest.Text("never said"),
	)
	inst := startClaude(t, model, "TEXTSLASH_DEFAULT_MODE=ask")
	c := inst.newChat(t)
	ctx, cancel := context.WithCancel(t.Context())
	events := c.events(ctx)
	id := c.send("make six")
	question(t, events)
	cancel()
	inst.kill()
	inst.start(t)
	events = c.events(t.Context())
	done := waitFor(t, events, 90*time.Second, func(ev sseEvent) bool { return ev.Kind == "done" && ev.Event.JobID == id })
	if done.Event.Status != contract.StatusInterrupted {
		t.Errorf("done %q (%s); want interrupted", done.Event.Text, done.Event.Status)
	}
	// The done reaches the chat and the dispatcher's state apart: status
	// asked before the state is idle again says the question still waits.
	waitFor(t, events, 30*time.Second, func(ev sseEvent) bool {
		return ev.Kind == string(contract.KindState) && ev.Event.To == contract.StateIdle
	})
	c.send("status")
	notice(t, events, "Idle")
}

// Plan mode: Claude may change nothing (a scripted Write is refused
// without asking); its plan is the reply; go carries it out in the
// person's usual mode, in the same session.
func TestPlanThenGo(t *testing.T) {
	model := claudetest.NewModel(t,
		claudetest.Text("Noted."),
		claudetest.ToolUse("Write", map[string]any{"file_path": "/set/by/the/test", "content": "too early"}),
		claudetest.Text("1. Write plan.txt\n2. Say so"),
		claudetest.ToolUse("Bash", map[string]any{"command": "echo built > plan.txt"}),
		claudetest.Text("Built."),
	)
	inst := startClaude(t, model)
	c := inst.newChat(t)
	events := c.events(t.Context())
	ws := filepath.Join(inst.Data, "workspaces", c.User.Key())
	// The Write's path must be absolute: fix the script now that the
	// workspace is known.
	model.SetTurn(1, claudetest.ToolUse("Write", map[string]any{"file_path": filepath.Join(ws, "early.txt"), "content": "too early"}))

	c.send("mode auto")
	notice(t, events, "Mode auto")
	c.ask(events, "remember the goal")
	idle(t, events)
	c.send("mode plan")
	notice(t, events, "Mode plan")
	c.send("status")
	notice(t, events, "Mode: plan.")
	reply := c.ask(events, "plan the build")
	idle(t, events) // go while the plan is still being written is refused
	if !strings.Contains(reply.Text, "1. Write plan.txt") || !strings.HasSuffix(reply.Text, "Reply go to carry out this plan, or tell me what to change.") {
		t.Errorf("plan reply %q; want the plan and how to go on", reply.Text)
	}
	if _, err := os.Stat(filepath.Join(ws, "early.txt")); !os.IsNotExist(err) {
		t.Errorf("early.txt: %v; want nothing written in plan mode", err)
	}
	if res := model.MainRequests()[2].ToolResults(); len(res) != 1 || !res[0].IsError || !strings.Contains(res[0].ResultText(), "Plan mode") {
		t.Errorf("the Write in plan mode got %+v; want it refused", res)
	}
	done := c.ask(events, "go")
	if done.Text != "Built." {
		t.Errorf("go: reply %q", done.Text)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "plan.txt")); err != nil || string(b) != "built\n" {
		t.Errorf("plan.txt = %q, %v; want built (go runs in the usual mode, auto: no question)", b, err)
	}
	if turns := userTurns(model); !mentionsAll(turns, "remember the goal", "plan the build", "The plan is approved") {
		t.Errorf("go: the model saw user turns %q; want the same session, told to carry out the plan", turns)
	}
}

// idle waits for the person to become idle.
func idle(t *testing.T, events <-chan sseEvent) {
	t.Helper()
	waitFor(t, events, 90*time.Second, func(ev sseEvent) bool {
		return ev.Kind == string(contract.KindState) && ev.Event.To == contract.StateIdle
	})
}

// btw during a run reaches the model's next request in that run.
func TestBtwSteersTheRun(t *testing.T) {
	model := claudetest.NewModel(t,
		claudetest.ToolUse("Bash", map[string]any{"command": "sleep 3"}),
		claudetest.Text("Done, with tests."),
	)
	inst := startClaude(t, model)
	c := inst.newChat(t)
	events := c.events(t.Context())
	id := c.send("build it")
	waitFor(t, events, 90*time.Second, func(ev sseEvent) bool {
		return ev.Kind == "progress" && ev.Event.Text == "Running `sleep 3`"
	})
	c.send("btw also add tests")
	notice(t, events, "Added to the current run")
	done := waitFor(t, events, 90*time.Second, func(ev sseEvent) bool { return ev.Kind == "done" && ev.Event.JobID == id })
	if done.Event.Text != "Done, with tests." {
		t.Errorf("reply %q", done.Event.Text)
	}
	reqs := model.MainRequests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), "also add tests") {
		t.Errorf("the model's second request does not carry the added message (%d requests)", len(reqs))
	}
}

// In ask mode a tool call is announced ("Running …") only once the person
// allows it: the question comes first, and a call they deny is never said
// to run.
func TestAskProgressAfterTheAnswer(t *testing.T) {
	model := claudetest.NewModel(t,
		claudetest.ToolUse("Bash", map[string]any{"command": "touch x"}),
		claudetest.ToolUse("Bash", map[string]any{"command": "touch y"}),
		claudetest.Text("Made x, not y."),
	)
	inst := startClaude(t, model, "TEXTSLASH_DEFAULT_MODE=ask")
	c := inst.newChat(t)
	events := c.events(t.Context())
	id := c.send("make x and y")
	var seen []string
	next := func(match func(sseEvent) bool) {
		t.Helper()
		waitFor(t, events, 90*time.Second, func(ev sseEvent) bool {
			if ev.Kind == "progress" || ev.Kind == string(contract.KindQuestion) {
				seen = append(seen, ev.Kind+": "+ev.Event.Text)
			}
			return match(ev)
		})
	}
	next(func(ev sseEvent) bool { return ev.Kind == string(contract.KindQuestion) })
	c.send("yes")
	next(func(ev sseEvent) bool { return ev.Kind == string(contract.KindQuestion) })
	c.send("no")
	next(func(ev sseEvent) bool { return ev.Kind == "done" && ev.Event.JobID == id })
	want := []string{
		"question: Claude wants to run `touch x` in your workspace. " + contract.QuestionPrompt,
		"progress: Running `touch x`",
		"question: Claude wants to run `touch y` in your workspace. " + contract.QuestionPrompt,
	}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Errorf("the person saw, in order:\n%s\nwant:\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
}
