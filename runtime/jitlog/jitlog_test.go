package jitlog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/internal/golden"
)

func loadFlex(t testing.TB) *dsl.Source {
	text, err := os.ReadFile("testdata/window.flex")
	if err != nil {
		t.Fatal(err)
	}
	return dsl.NewSource("window.flex", text)
}

func TestParse(t *testing.T) {
	tests := []struct {
		log  string
		want []Message
	}{
		{`k.flex(3): error: bad thing`, []Message{{File: "k.flex", Line: 3, Severity: "error", Text: "bad thing"}}},
		{`a b.cu(10): warning #177-D: unused`, []Message{{File: "a b.cu", Line: 10, Severity: "warning", Text: "unused"}}},
		{`x.cu(1): catastrophic error: cannot open`, []Message{{File: "x.cu", Line: 1, Severity: "error", Text: "cannot open"}}},
		{"k.flex:4:12: error: use of undeclared identifier 'y'\r", []Message{{File: "k.flex", Line: 4, Column: 12, Severity: "error", Text: "use of undeclared identifier 'y'"}}},
		{`/tmp/x.hip:1:2: fatal error: 'cmath' file not found`, []Message{{File: "/tmp/x.hip", Line: 1, Column: 2, Severity: "error", Text: "'cmath' file not found"}}},
		{"    return x;\n           ^\n1 error detected", nil},
		{`k.flex(99999999999999999999): error: overflow`, nil},
	}
	for _, tc := range tests {
		got := Parse(tc.log)
		if len(got) != len(tc.want) {
			t.Errorf("Parse(%q) = %+v, want %+v", tc.log, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("Parse(%q)[%d] = %+v, want %+v", tc.log, i, got[i], tc.want[i])
			}
		}
	}
}

// TestDiagnosticsGolden renders the diagnostics of each testdata/*.log
// against testdata/window.flex and compares with the .golden file.
func TestDiagnosticsGolden(t *testing.T) {
	flex := loadFlex(t)
	logs, err := filepath.Glob("testdata/*.log")
	if err != nil || len(logs) == 0 {
		t.Fatalf("no logs: %v", err)
	}
	for _, path := range logs {
		t.Run(filepath.Base(path), func(t *testing.T) {
			log, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			diags := Diagnostics(string(log), flex)
			if !diags.HasErrors() {
				t.Fatal("a failed compilation produced no error diagnostic")
			}
			golden.CheckString(t, strings.TrimSuffix(path, ".log")+".golden", diags.Render())
		})
	}
}

func TestFlexErrorsPointAtTheirLine(t *testing.T) {
	flex := loadFlex(t)
	diags := Diagnostics("window.flex(6): error: boom\n", flex)
	if len(diags) != 1 {
		t.Fatalf("got %d diagnostics", len(diags))
	}
	d := diags[0]
	if d.Code != CodeFlexError || d.Source != flex {
		t.Fatalf("got code %s source %v", d.Code, d.Source)
	}
	if p := d.Position(); p.Line != 6 || p.Column != 1 {
		t.Errorf("position %d:%d, want 6:1", p.Line, p.Column)
	}
	if got := flex.Slice(d.Span); got != flex.Line(6) {
		t.Errorf("span covers %q, want the whole line", got)
	}
}

func TestCodesAreDescribed(t *testing.T) {
	for _, c := range []dsl.Code{CodeFlexError, CodeKernelError} {
		if Codes[c] == "" {
			t.Errorf("code %s has no description", c)
		}
		if c < "E400" || c > "E499" {
			t.Errorf("code %s outside the runtime range", c)
		}
	}
}

func FuzzDiagnostics(f *testing.F) {
	flex := loadFlex(f)
	for _, name := range []string{"nvrtc_flex.log", "hiprtc_flex.log", "mixed.log"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("window.flex:0:0: error: x")
	f.Fuzz(func(t *testing.T, log string) {
		diags := Diagnostics(log, flex)
		if !diags.HasErrors() {
			t.Fatal("no error diagnostic")
		}
		for _, d := range diags {
			if d.Source != nil && (d.Span.Start < 0 || d.Span.End > len(flex.Text) || d.Span.Start > d.Span.End) {
				t.Fatalf("span %+v outside the source", d.Span)
			}
			_ = d.Render()
		}
	})
}
