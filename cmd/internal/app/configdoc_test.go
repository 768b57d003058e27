package app

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

var updateDocs = flag.Bool("update", false, "rewrite docs/configuration.md's table of settings from the declarations")

// docPath is the configuration reference, from this package's directory.
const docPath = "../../../docs/configuration.md"

// The markers around the generated table in docs/configuration.md.
const (
	tableStart = "<!-- The table below is generated from the settings' declarations (cmd/internal/app): go test ./cmd/internal/app -run TestConfigurationDoc -update -->"
	tableEnd   = "<!-- end of the generated table -->"
)

// docs/configuration.md's table of settings is the declarations'
// own (variable, flag, default, help), so it cannot drift from them: a
// setting added, renamed, given another default or help fails this test
// until the table is made again (-update).
func TestConfigurationDoc(t *testing.T) {
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	start, end := strings.Index(string(doc), tableStart), strings.Index(string(doc), tableEnd)
	if start < 0 || end < start {
		t.Fatalf("%s: no generated table between %q and %q", docPath, tableStart, tableEnd)
	}
	table := settingsTable(t)
	want := string(doc[:start]) + tableStart + "\n\n" + table + "\n" + string(doc[end:])
	if want == string(doc) {
		return
	}
	if *updateDocs {
		if err := os.WriteFile(docPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's table of settings is not the declarations': make it again with\n\tgo test ./cmd/internal/app -run TestConfigurationDoc -update", docPath)
}

// settingsTable is a markdown table of every setting textslash serve
// reads, in the order --help lists them.
func settingsTable(t *testing.T) string {
	t.Helper()
	vars := settingsVars(false)
	vars["runner_id"] = "this host's name"
	parser, err := kong.New(&serveFlags{}, vars)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("| variable | flag | default | meaning |\n| --- | --- | --- | --- |\n")
	for _, group := range parser.Model.AllFlags(true) {
		for _, f := range group {
			v := f.Tag.Get("var")
			if v == "" || f.Name == "help" {
				continue
			}
			def := "—"
			if f.HasDefault {
				def = "`" + f.Default + "`"
			}
			fmt.Fprintf(&b, "| `%s` | `--%s` | %s | %s |\n", v, f.Name, def, cell(f.Help))
		}
	}
	return b.String()
}

// cell is text safe in a markdown table's cell.
func cell(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ") }
