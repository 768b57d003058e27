package handover

import (
	"strings"
	"testing"
)

func TestDiffHTML(t *testing.T) {
	diff := `diff --git a/app.js b/app.js
index 1111111..2222222 100644
--- a/app.js
+++ b/app.js
@@ -1,2 +1,2 @@
 const a = 1;
-if (a < 2) {}
+if (a > 2) { alert("<b>") }
diff --git a/dev/null b/new.txt
new file mode 100644
--- /dev/null
+++ b/new.txt
@@ -0,0 +1 @@
+hello
`
	page := diffHTML(diff, 100)
	for _, want := range []string{
		"<div class=f>app.js</div>", "<div class=h>@@ -1,2 +1,2 @@</div>", "<div> const a = 1;</div>",
		"<div class=d>-if (a &lt; 2) {}</div>", `<div class=a>+if (a &gt; 2) { alert(&#34;&lt;b&gt;&#34;) }</div>`,
		"<div class=f>new.txt</div>", "<div class=a>+hello</div>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	for _, gone := range []string{"index 1111111", "+++ b/app.js", "--- /dev/null", "new file mode", "more line"} {
		if strings.Contains(page, gone) {
			t.Errorf("page shows %q", gone)
		}
	}
	// Of the 8 lines shown in full, 3 and the count of the rest.
	short := diffHTML(diff, 3)
	if !strings.Contains(short, "… and 5 more lines") || !strings.Contains(short, "const a") || strings.Contains(short, "-if") {
		t.Errorf("cut at 3 lines:\n%s", short)
	}
}
