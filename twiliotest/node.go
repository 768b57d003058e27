package twiliotest

import (
	"bytes"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/textslash/textslash/natstest"
)

// nodeScript runs one call of the twilio package, reading its arguments as
// JSON on stdin and writing its result as JSON on stdout.
const nodeScript = `
const twilio = require('twilio');
let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d) => { input += d; });
process.stdin.on('end', () => {
  const a = JSON.parse(input);
  const out = a.signature === undefined
    ? twilio.getExpectedTwilioSignature(a.token, a.url, a.params)
    : twilio.validateRequest(a.token, a.signature, a.url, a.params);
  process.stdout.write(JSON.stringify(out));
});
`

// NodeSign is the signature the official twilio npm package computes
// (twilio.getExpectedTwilioSignature) for a form POST of params to fullURL.
// It runs node with NODE_PATH set to $TEXTSLASH_TEST_NODE_MODULES, else
// testdata/npm/node_modules under the repository root. The test is skipped
// when node or the package is missing, or fails when $CI is set.
func NodeSign(t testing.TB, authToken, fullURL string, params url.Values) string {
	t.Helper()
	var sig string
	runNode(t, map[string]any{"token": authToken, "url": fullURL, "params": jsParams(params)}, &sig)
	return sig
}

// NodeValidate reports whether the official twilio npm package
// (twilio.validateRequest) accepts signature for a form POST of params to
// fullURL. It finds node and the package as NodeSign does.
func NodeValidate(t testing.TB, authToken, signature, fullURL string, params url.Values) bool {
	t.Helper()
	var ok bool
	runNode(t, map[string]any{
		"token": authToken, "signature": signature, "url": fullURL, "params": jsParams(params),
	}, &ok)
	return ok
}

// jsParams is params as a web framework hands them to the twilio package:
// a string per name, or an array for a repeated name.
func jsParams(params url.Values) map[string]any {
	out := make(map[string]any, len(params))
	for name, values := range params {
		if len(values) == 1 {
			out[name] = values[0]
		} else {
			out[name] = values
		}
	}
	return out
}

func runNode(t testing.TB, args map[string]any, result any) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		natstest.Missing(t, "node: %v", err)
	}
	modules := nodeModules(t)
	if _, err := os.Stat(filepath.Join(modules, "twilio", "package.json")); err != nil {
		natstest.Missing(t, "twilio npm package: %v", err)
	}
	in, err := json.Marshal(args)
	if err != nil {
		t.Fatalf("twiliotest: encode node arguments: %v", err)
	}
	cmd := exec.Command(node, "-e", nodeScript)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("twiliotest: node: %v\n%s", err, stderr.Bytes())
	}
	if err := json.Unmarshal(out, result); err != nil {
		t.Fatalf("twiliotest: node printed %q: %v", out, err)
	}
}
