package runner

import (
	"fmt"

	"github.com/textslash/textslash/contract"
)

// costLine says what a run cost, for the end of its reply.
func costLine(done contract.Event) string {
	return fmt.Sprintf("(This run: $%.4f, %s tokens in, %s out.)", done.CostUSD,
		thousands(done.InputTokens), thousands(done.OutputTokens))
}

// thousands writes 12345 as 12,345.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
