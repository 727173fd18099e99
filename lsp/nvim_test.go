package lsp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/protocol"

	"github.com/maskc/maskc/dsl"
)

// TestNeovim runs a real editor client against `maskc lsp`: it builds
// cmd/maskc, and headless Neovim (0.7 or later, Debian's `neovim` package)
// with editors/nvim/maskc.lua opens a file, receives its diagnostics, asks
// for a hover on its first attention block, types a syntax error and
// receives the new diagnostics (testdata/nvim/client.lua). The files are
// testdata/swa.flex, whose answers are pinned exactly, and
// examples/sliding_window.flex, whose answers must equal what the server
// computes in-process. A missing nvim, or -short, skips the test locally;
// in CI (CI=true) it always runs, and a missing nvim fails it.
func TestNeovim(t *testing.T) {
	inCI := os.Getenv("CI") == "true"
	if testing.Short() && !inCI {
		t.Skip("builds a binary and starts Neovim")
	}
	nvim, err := exec.LookPath("nvim")
	if err != nil {
		if inCI {
			t.Fatalf("nvim is required in CI (apt-get install -y neovim): %v", err)
		}
		t.Skipf("nvim not installed: %v", err)
	}
	dir := t.TempDir()
	maskc := filepath.Join(dir, "maskc")
	build := exec.Command(goTool(t), "build", "-o", maskc, "../cmd/maskc")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building maskc: %v\n%s", err, out)
	}
	editors, err := filepath.Abs("../editors")
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		path      string
		wantDiags string // the codes and start positions published on open
		wantHover string // a part of the hover on the first attention block
	}{
		{"testdata/swa.flex", "W001@2:6",
			"**sliding_window_causal** → `flash_attn_func(causal=True, window_size=(1023, 0))`, precondition sq == skv"},
		{"../examples/sliding_window.flex", "",
			"**sliding_window_causal** → `flash_attn_func(causal=True, window_size=(1024, 0))`, precondition sq == skv"},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.path), func(t *testing.T) {
			text, err := os.ReadFile(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			flex := filepath.Join(t.TempDir(), filepath.Base(tt.path))
			if err := os.WriteFile(flex, text, 0o644); err != nil {
				t.Fatal(err)
			}
			res := runNeovim(t, nvim, dir, flex, map[string]string{"MASKC": maskc, "MASKC_EDITORS": editors})

			// What the server computes in-process for the same text.
			a := analyze(flex, text, nil)
			var first *dsl.AttentionDecl
			for _, d := range a.file.Decls {
				if at, ok := d.(*dsl.AttentionDecl); ok && first == nil {
					first = at
				}
			}

			if res.Filetype != "maskc" {
				t.Errorf("filetype = %q, want maskc", res.Filetype)
			}
			if got := diagSummary(res.Diagnostics); got != tt.wantDiags {
				t.Errorf("diagnostics on open = %q, want %q", got, tt.wantDiags)
			}
			if want := diagSummary(a.protocolDiagnostics()); diagSummary(res.Diagnostics) != want {
				t.Errorf("diagnostics on open = %q, in-process %q", diagSummary(res.Diagnostics), want)
			}
			if res.Hover == nil || res.Hover.Contents.Kind != protocol.Markdown {
				t.Fatalf("hover = %+v, want markdown", res.Hover)
			}
			// `maskc lsp` draws pictures under the user cache directory: the
			// hover ends with a link to the block's picture, written there.
			got := res.Hover.Contents.Value
			m := regexp.MustCompile(`\n\n\[tile map picture\]\(file://([^)]+\.png)\) \([^)]*\)$`).FindStringSubmatchIndex(got)
			if m == nil {
				t.Errorf("hover = %q, want it to end with a tile map picture link", got)
			} else {
				if _, err := os.Stat(got[m[2]:m[3]]); err != nil {
					t.Errorf("the hover's picture: %v", err)
				}
				got = got[:m[0]]
			}
			if !strings.Contains(got, tt.wantHover) || got != a.attentionHover(first) {
				t.Errorf("hover = %q\nwant it to contain %q and equal the in-process %q", got, tt.wantHover, a.attentionHover(first))
			}
			// With a syntax error, only syntax diagnostics are shown.
			lastLine := strings.Count(string(text), "\n")
			if got, want := diagSummary(res.DiagnosticsAfterEdit), fmt.Sprintf("E011@%d:31", lastLine); got != want {
				t.Errorf("diagnostics after the edit = %q, want %q", got, want)
			}
		})
	}
}

// neovimResult is what testdata/nvim/client.lua writes.
type neovimResult struct {
	Error                string                `json:"error"`
	Filetype             string                `json:"filetype"`
	Diagnostics          []protocol.Diagnostic `json:"diagnostics"`
	Hover                *protocol.Hover       `json:"hover"`
	DiagnosticsAfterEdit []protocol.Diagnostic `json:"diagnostics_after_edit"`
}

// runNeovim runs the client script on flex in headless Neovim, with its
// state kept under dir, and returns what the script recorded.
func runNeovim(t *testing.T, nvim, dir, flex string, env map[string]string) *neovimResult {
	t.Helper()
	outFile := filepath.Join(t.TempDir(), "result.json")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, nvim, "--headless", "-u", "NONE", "-i", "NONE", "-n",
		"-c", "luafile testdata/nvim/client.lua")
	cmd.Env = append(os.Environ(), "FLEX_FILE="+flex, "OUT_FILE="+outFile,
		"XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_STATE_HOME="+dir, "XDG_CACHE_HOME="+filepath.Join(dir, "cache"))
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nvim: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(outFile)
	if err != nil {
		t.Fatalf("nvim wrote no result: %v", err)
	}
	var res neovimResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("bad result %s: %v", raw, err)
	}
	if res.Error != "" {
		t.Fatalf("client script failed: %s", res.Error)
	}
	return &res
}

// diagSummary lists diagnostics as "CODE@line:character", space-separated.
func diagSummary(ds []protocol.Diagnostic) string {
	var parts []string
	for _, d := range ds {
		parts = append(parts, fmt.Sprintf("%v@%d:%d", d.Code, d.Range.Start.Line, d.Range.Start.Character))
	}
	return strings.Join(parts, " ")
}

// goTool is the go command of the toolchain running the test.
func goTool(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("no go command: %v", err)
	}
	return p
}
