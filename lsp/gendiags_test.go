package lsp

import (
	"strings"
	"testing"

	"go.lsp.dev/protocol"

	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/dsl"
)

// TestGeneratorDiagnostics checks that the server shows the code
// generator's refusals, positioned, as `maskc check` does: a file that
// only the generator can refuse is not shown as clean.
func TestGeneratorDiagnostics(t *testing.T) {
	nine := ""
	var reads []string
	for _, c := range "012345678" {
		nine += "buffer t" + string(c) + ": i32[KV]\n"
		reads = append(reads, "t"+string(c)+"[kv]")
	}
	tests := []struct {
		name string
		text string
		code dsl.Code
		at   protocol.Position
	}{
		{"int64 overflow", "mask m(b, h, q, kv) = q * 4611686018427387904 // 4611686018427387904 == q\nattention a {\n    mask = m\n}\n",
			codegen.CodeIntOverflow, protocol.Position{Line: 0, Character: 22}},
		{"too many buffers", nine + "mask m(b, h, q, kv) = " + strings.Join(reads, " + ") + " > 0\nattention a {\n    mask = m\n}\n",
			codegen.CodeTooManyBuffers, protocol.Position{Line: 8, Character: 7}},
		// 9 dimensions, one more than the kernel ABI carries (issue 27).
		{"buffer rank", "buffer t9: f32[B, H, 2, 2, 2, 2, 2, 2, KV]\nmask m(b, h, q, kv) = t9[b, h, 0, 1, 0, 1, 0, 1, kv] > 0\nattention a {\n    mask = m\n}\n",
			codegen.CodeBufferRank, protocol.Position{Line: 0, Character: 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := analyze("gen.flex", []byte(tt.text), &parseCache{})
			if len(a.panics) > 0 {
				t.Fatalf("panics: %v", a.panics)
			}
			var found bool
			for _, d := range a.protocolDiagnostics() {
				if d.Code == string(codegen.CodeBufferIndex) {
					// issue 31: E303 was followed by this internal error.
					t.Errorf("internal error %s after %s: %s", d.Code, tt.code, d.Message)
				}
				if d.Code == string(tt.code) {
					found = true
					if d.Range.Start != tt.at {
						t.Errorf("%s at %v, want %v", tt.code, d.Range.Start, tt.at)
					}
					if d.Severity != protocol.DiagnosticSeverityError {
						t.Errorf("%s has severity %v", tt.code, d.Severity)
					}
				}
			}
			if !found {
				t.Errorf("no %s among:\n%s", tt.code, a.diags.Render())
			}
		})
	}
}
