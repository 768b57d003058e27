package runner

import "github.com/textslash/textslash/contract"

// costLine says what a run cost, for the end of its reply.
func costLine(done contract.Event) string {
	c := contract.Cost{USD: done.CostUSD, InputTokens: done.InputTokens, OutputTokens: done.OutputTokens}
	return "(This run: " + c.String() + ".)"
}
