package handover

import (
	"strings"
	"testing"
)

// A describe prompt names the image and the person's request.
func TestDescribePrompt(t *testing.T) {
	p := describePrompt("shots/login.png", "Why is the login page broken?")
	for _, want := range []string{"shots/login.png", "Why is the login page broken?", "two or three sentences", "UI problems"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt %q does not say %q", p, want)
		}
	}
	if long := describePrompt("a.png", strings.Repeat("x", 5000)); len(long) > 1200 {
		t.Errorf("a long request makes a prompt of %d bytes; want it cut", len(long))
	}
}
