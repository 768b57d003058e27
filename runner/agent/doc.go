// Package agent holds the agents: the programs that turn a person's
// message into a reply in their workspace (Agent, and what one is given
// and returns: Run, Result). Claude runs Claude Code headless and speaks
// its stream-json protocol both ways (its tool calls as progress lines,
// its permission requests as Questions, the messages the person adds to
// the run), on a CLI of the run's own or on one kept running between runs
// (Warm); Command runs any program by a small contract of stdin,
// stdout and marker lines; Shell runs the person's words as a bash
// script. Every agent's output may hand over images and files by marker
// lines (Handover, with captions), and Claude's permission rules say
// what a person's "always" allows for the rest of a session (Rule,
// AllowList).
//
// It knows nothing of the runner that uses it: what an agent needs of
// the run (starting its programs in the sandbox, reporting progress,
// asking the person) comes as Run's functions, so the runner's packages
// may import this one and never the other way.
package agent
