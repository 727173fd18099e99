package codegen

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestLineDirectives checks the #line directives of a full source: those
// naming the .flex file point at the lines the statements came from, and
// those that return to the generated file give the next line its true
// number, so compiler messages outside the mask point at the right line.
func TestLineDirectives(t *testing.T) {
	p := loadProgram(t, "testdata/golden/document.flex")
	k, diags := Generate(p, p.Attentions[0], Options{SourceName: "doc.flex"})
	if diags.HasErrors() {
		t.Fatal(diags.Render())
	}
	directive := regexp.MustCompile(`^#line (\d+) "([^"]+)"$`)
	for _, tc := range []struct{ text, self string }{{k.Source, "document_causal.cu"}, {k.Generated, "document_causal.generated.h"}} {
		lines := strings.Split(tc.text, "\n")
		flex, self := 0, 0
		for i, ln := range lines {
			m := directive.FindStringSubmatch(ln)
			if m == nil {
				continue
			}
			n, _ := strconv.Atoi(m[1])
			switch m[2] {
			case tc.self:
				self++
				if n != i+2 {
					t.Errorf("%s line %d: %q, but the next line is %d", tc.self, i+1, ln, i+2)
				}
			case "doc.flex":
				flex++
				stmt := strings.TrimSpace(lines[i+1])
				src := p.File.Source.Line(n)
				// The statement's operands appear on that .flex line.
				if strings.Contains(stmt, "q >= kv") && !strings.Contains(src, "q >= kv") ||
					strings.Contains(stmt, "maskc_read_doc") && !strings.Contains(src, "doc[") {
					t.Errorf("%q is attributed to doc.flex:%d %q", stmt, n, src)
				}
			default:
				t.Errorf("unexpected #line file in %q", ln)
			}
		}
		if flex < 2 || self < 1 {
			t.Errorf("%s: %d directives to the .flex file, %d back to itself", tc.self, flex, self)
		}
	}
	if strings.Contains(k.Source, lineResetMarker) {
		t.Error("a line-reset marker is left in the source")
	}
}
