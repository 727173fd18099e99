package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRun runs tilecount on a causal mask, whose kept pairs are S(S+1)/2
// per (b, h), and on its refusals.
func TestRun(t *testing.T) {
	bufs := filepath.Join(t.TempDir(), "bufs.json")
	// 300 positions in two documents of 150: each keeps 150*151/2 pairs.
	doc := make([]string, 300)
	for i := range doc {
		doc[i] = map[bool]string{true: "0", false: "1"}[i < 150]
	}
	if err := os.WriteFile(bufs, []byte(`{"document_causal:packed_layer": {"doc": {"dims": [300], "data": [`+strings.Join(doc, ",")+`]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		code     int
		kept     []int64 // kept pairs per output line
		stderrRx string
	}{
		{"causal", []string{"-shape", "1,2,300,300", "../../gpu/bench_cases/causal.flex"}, 0, []int64{2 * 300 * 301 / 2}, ""},
		{"document causal with buffers", []string{"-shape", "1,2,300,300", "-buffers", bufs, "../../examples/document_causal.flex"}, 0, []int64{2 * 2 * 150 * 151 / 2}, ""},
		{"missing buffer", []string{"-shape", "1,2,300,300", "../../examples/document_causal.flex"}, 1, nil, "no contents for buffer doc"},
		{"bad shape", []string{"-shape", "1,2,300", "../../gpu/bench_cases/causal.flex"}, 2, nil, "-shape B,H,Sq,Skv"},
		{"unknown platform", []string{"-shape", "1,2,300,300", "-platform", "tpu", "../../gpu/bench_cases/causal.flex"}, 2, nil, "unknown platform"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			if code := run(tt.args, &stdout, &stderr); code != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.stderrRx) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderrRx, stderr.String())
			}
			dec := json.NewDecoder(strings.NewReader(stdout.String()))
			var got []int64
			for dec.More() {
				var r row
				if err := dec.Decode(&r); err != nil {
					t.Fatal(err)
				}
				if r.Visited < r.WithKept || r.Visited > r.Tiles {
					t.Errorf("%s: %d tiles visited, outside [%d, %d]", r.Name, r.Visited, r.WithKept, r.Tiles)
				}
				got = append(got, r.KeptPairs)
			}
			if len(got) != len(tt.kept) {
				t.Fatalf("kept pairs %v, want %v", got, tt.kept)
			}
			for i := range got {
				if got[i] != tt.kept[i] {
					t.Errorf("kept pairs %v, want %v", got, tt.kept)
				}
			}
		})
	}
}
