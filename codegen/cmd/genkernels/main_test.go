package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/hipsrc"
)

func TestRun(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "trainer.flex")
	if err := os.WriteFile(bad, []byte("attention swa {\n    mask = causal\n    window = (16, 0)\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	inputs := []string{"../../testdata/golden/document.flex", "../../testdata/golden/lookup.flex", bad}
	tests := []struct {
		name     string
		args     []string
		code     int
		kernels  int
		skipped  int
		stderrRx string
	}{
		{"writes kernels and skips what it cannot generate", inputs, 0, 3, 1, "E309"},
		{"strict fails on a skipped block", append([]string{"-strict"}, inputs...), 1, 3, 1, "E309"},
		{"overrides", append([]string{"-head-dim", "64", "-dtype", "fp16"}, inputs[:1]...), 0, 1, 0, ""},
		{"missing output directory", nil, 2, -1, -1, "usage"},
		{"bad -D", []string{"-D", "oops", inputs[0]}, 2, -1, -1, "NAME=VALUE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			args := tt.args
			if tt.kernels >= 0 {
				args = append([]string{"-o", dir}, args...)
			}
			var stdout, stderr strings.Builder
			if code := run(args, &stdout, &stderr); code != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.stderrRx) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderrRx, stderr.String())
			}
			if tt.kernels < 0 {
				return
			}
			b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
			if err != nil {
				t.Fatal(err)
			}
			var m Manifest
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			if len(m.Kernels) != tt.kernels || len(m.Skipped) != tt.skipped {
				t.Fatalf("%d kernels, %d skipped; want %d, %d", len(m.Kernels), len(m.Skipped), tt.kernels, tt.skipped)
			}
			for _, k := range m.Kernels {
				src, err := os.ReadFile(filepath.Join(dir, k.Source))
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(src), "maskc_attn_fwd(") || !strings.Contains(string(src), "#define MASKC_HEAD_DIM "+itoa(k.HeadDim)) {
					t.Errorf("%s is not a full kernel source of head dim %d", k.Source, k.HeadDim)
				}
			}
		})
	}
}

func TestManifestContent(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr strings.Builder
	if code := run([]string{"-o", dir, "../../testdata/golden/document.flex", "../../testdata/golden/lookup.flex"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	b, _ := os.ReadFile(filepath.Join(dir, "manifest.json"))
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	doc := m.Kernels[0]
	if doc.Name != "document_causal" || doc.Source != "document_causal.cu" || doc.Flex != "../../testdata/golden/document.flex" {
		t.Errorf("document kernel names: %+v", doc)
	}
	if doc.Attention != "document_causal" || doc.Sparsity != "analytic" || doc.MaskTorch != "((q >= kv) & (doc[q] == doc[kv]))" ||
		len(doc.Buffers) != 1 || doc.Buffers[0].Name != "doc" || !doc.Buffers[0].Segments || doc.Buffers[0].Dims[0] != "KV" {
		t.Errorf("document kernel: %+v", doc)
	}
	perHead := m.Kernels[2]
	if perHead.Attention != "per_head" || perHead.Sparsity != "prepass" || perHead.FlagsEntry != "maskc_tile_flags" || !perHead.MaskUsesH || perHead.MaskUsesB {
		t.Errorf("per_head kernel: %+v", perHead)
	}
}

// TestManifestGradBuffers: the manifest marks the buffers the score's
// gradient covers.
func TestManifestGradBuffers(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr strings.Builder
	if code := run([]string{"-o", dir, "../../../examples/relative_bias.flex", "../../testdata/golden/document.flex"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	b, _ := os.ReadFile(filepath.Join(dir, "manifest.json"))
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	rel, doc := m.Kernels[0], m.Kernels[1]
	if rel.ScoreGradReads != 1 || len(rel.Buffers) != 1 || rel.Buffers[0].Name != "bias" || !rel.Buffers[0].Grad {
		t.Errorf("relative bias kernel: %+v", rel)
	}
	if doc.ScoreGradReads != 0 || len(doc.Buffers) != 1 || doc.Buffers[0].Grad {
		t.Errorf("document kernel (an int buffer in the mask): %+v", doc)
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// TestManifestBackward: every kernel's backward source is written beside
// its forward and the manifest describes how to launch it.
func TestManifestBackward(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr strings.Builder
	if code := run([]string{"-o", dir, "../../testdata/golden/document.flex", "../../testdata/golden/lookup.flex"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	b, _ := os.ReadFile(filepath.Join(dir, "manifest.json"))
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range m.Kernels {
		if want := k.Name + ".bwd.cu"; k.BwdSource != want {
			t.Errorf("%s: bwd_source %q, want %q", k.Name, k.BwdSource, want)
		}
		src, err := os.ReadFile(filepath.Join(dir, k.BwdSource))
		if err != nil {
			t.Fatal(err)
		}
		body := strings.TrimRight(string(src), "\n")
		if !strings.HasSuffix(body, strings.TrimRight(hipsrc.AttnFwd, "\n")+"\n"+strings.TrimRight(hipsrc.AttnBwd, "\n")) ||
			!strings.HasPrefix(body, hipsrc.Prelude[:200]) {
			t.Errorf("%s: the backward source is not the prelude ... attn_fwd.h followed by attn_bwd.h", k.Name)
		}
		for _, e := range k.BwdEntries {
			if !strings.Contains(string(src), "maskc_attn_bwd") || !strings.Contains(string(src), e+"(") {
				t.Errorf("%s: backward source lacks entry point %s", k.Name, e)
			}
		}
		if len(k.BwdEntries) != len(codegen.BwdEntries) || k.BwdBlockM != hipsrc.BwdBlockM || k.BwdBlockN != hipsrc.BwdBlockN ||
			k.BwdSharedMemBytes != hipsrc.BwdSharedMemBytes(k.HeadDim) {
			t.Errorf("%s: backward launch fields %+v", k.Name, k)
		}
	}
}
