package runner

import "github.com/textslash/textslash/contract"

// costLine says what a run cost as the agent named so reports it, for
// the end of its reply.
func costLine(done contract.Event, agent string) string {
	c := contract.Cost{USD: done.CostUSD, InputTokens: done.InputTokens, OutputTokens: done.OutputTokens}
	return "(This run: " + c.Of(agent) + ".)"
}
