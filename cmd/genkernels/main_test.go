package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/maskc/maskc/hipsrc"
)

func TestRun(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "trainer.flex")
	if err := os.WriteFile(bad, []byte("attention swa {\n    mask = causal\n    window = (16, 0)\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	inputs := []string{"../../codegen/testdata/golden/document.flex", "../../codegen/testdata/golden/lookup.flex", bad}
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
			var m hipsrc.Manifest
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			if len(m.Kernels) != tt.kernels || len(m.Skipped) != tt.skipped {
				t.Fatalf("%d kernels, %d skipped; want %d, %d", len(m.Kernels), len(m.Skipped), tt.kernels, tt.skipped)
			}
			for _, k := range m.Kernels {
				src, err := os.ReadFile(filepath.Join(dir, k.SourceFile))
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(src), "maskc_attn_fwd(") || !strings.Contains(string(src), "#define MASKC_HEAD_DIM "+itoa(k.HeadDim)) {
					t.Errorf("%s is not a full kernel source of head dim %d", k.SourceFile, k.HeadDim)
				}
			}
		})
	}
}

func TestManifestContent(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr strings.Builder
	if code := run([]string{"-o", dir, "../../codegen/testdata/golden/document.flex", "../../codegen/testdata/golden/lookup.flex"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	b, _ := os.ReadFile(filepath.Join(dir, "manifest.json"))
	var m hipsrc.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	doc := m.Kernels[0]
	if doc.ID != "document_causal" || doc.SourceFile != "document_causal.cu" || doc.Flex != "../../codegen/testdata/golden/document.flex" {
		t.Errorf("document kernel names: %+v", doc)
	}
	if doc.Attention != "document_causal" || doc.Sparsity != "analytic" || doc.MaskTorch != "((q >= kv) & (doc[q] == doc[kv]))" ||
		len(doc.Slots) != 1 || doc.Slots[0].Name != "doc" || !doc.Slots[0].Segments || doc.Slots[0].Dims[0] != "KV" {
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
	if code := run([]string{"-o", dir, "../../examples/relative_bias.flex", "../../codegen/testdata/golden/document.flex"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	b, _ := os.ReadFile(filepath.Join(dir, "manifest.json"))
	var m hipsrc.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	rel, doc := m.Kernels[0], m.Kernels[1]
	if rel.ScoreGradReads != 1 || len(rel.Slots) != 1 || rel.Slots[0].Name != "bias" || !rel.Slots[0].Grad {
		t.Errorf("relative bias kernel: %+v", rel)
	}
	if doc.ScoreGradReads != 0 || len(doc.Slots) != 1 || doc.Slots[0].Grad {
		t.Errorf("document kernel (an int buffer in the mask): %+v", doc)
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// pythonReader loads the GPU scripts' harness (gpu/harness.py, on the
// package's maskc.abi and maskc.launcher) with a stand-in torch module (the
// harness needs a GPU only to launch) and prints what it reads from the
// manifest in DIR: struct sizes and offsets, the two grids for fixed
// sizes, and each kernel's nvidia-sm90a launch.
const pythonReader = `
import sys, types, ctypes, json
class _Torch(types.ModuleType):
    def __getattr__(self, name):
        return name
sys.modules["torch"] = _Torch("torch")
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import harness as mg
abi, kernels = mg.load_manifest(sys.argv[3])
sizes = {"B": 3, "H": 5, "Sq": 1000, "Skv": 777}
out = {
    "shape": [ctypes.sizeof(abi.Shape), abi.Shape.scale.offset, abi.Shape.tile_flags.offset],
    "buffers": [ctypes.sizeof(abi.Buffers), abi.Buffers.dim.offset],
    "fwd": list(abi.grid("maskc_attn_fwd", sizes, 64)),
    "flags": list(abi.grid("maskc_tile_flags", sizes, 64)),
    "launch": [k["launch"]["nvidia-sm90a"] for k in kernels],
    "max_seq_len": abi.max_seq_len,
}
print(json.dumps(out))
`

// TestPythonHarnessReadsManifest checks that gpu/harness.py, which
// launches kernels from manifest.json alone, reads from it the layouts,
// grids and launch configuration hipsrc defines.
func TestPythonHarnessReadsManifest(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 is required in CI")
		}
		t.Skip("python3 not found")
	}
	dir := t.TempDir()
	var stdout, stderr strings.Builder
	if code := run([]string{"-o", dir, "../../codegen/testdata/golden/lookup.flex"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out, err := exec.Command(python, "-c", pythonReader, "../../python", "../../gpu", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	var got struct {
		Shape, Buffers, Fwd, Flags []int
		Launch                     []hipsrc.LaunchConfig
		MaxSeqLen                  int `json:"max_seq_len"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	scale, _ := hipsrc.ShapeStruct.Field("scale")
	flags, _ := hipsrc.ShapeStruct.Field("tile_flags")
	dim, _ := hipsrc.BuffersStruct.Field("dim")
	fwd, fl := hipsrc.AttnGrid(3, 5, 1000), hipsrc.FlagsGrid(64, 1000, 777)
	launch, _ := hipsrc.Launches(128, false)
	want := []struct {
		what      string
		got, want any
	}{
		{"MaskcShape", got.Shape, []int{hipsrc.ShapeStruct.Size, scale.Offset, flags.Offset}},
		{"MaskcBuffers", got.Buffers, []int{hipsrc.BuffersStruct.Size, dim.Offset}},
		{"forward grid", got.Fwd, fwd[:]},
		{"flags grid", got.Flags, fl[:]},
		{"max_seq_len", got.MaxSeqLen, hipsrc.MaxSeqLen},
	}
	for _, w := range want {
		if fmt.Sprint(w.got) != fmt.Sprint(w.want) {
			t.Errorf("%s: python reads %v, hipsrc defines %v", w.what, w.got, w.want)
		}
	}
	if len(got.Launch) == 0 {
		t.Fatal("no kernels read")
	}
	for _, l := range got.Launch {
		if l != launch["nvidia-sm90a"] {
			t.Errorf("sm90a launch: python reads %+v, hipsrc defines %+v", l, launch["nvidia-sm90a"])
		}
	}
}

// TestManifestBackward: every kernel's backward source is written beside
// its forward and the manifest describes how to launch it (the soft-capped
// causal layer's warp-specialized, with the ordered deterministic dQ).
func TestManifestBackward(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr strings.Builder
	if code := run([]string{"-o", dir, "../../codegen/testdata/golden/document.flex", "../../codegen/testdata/golden/lookup.flex", "../../examples/softcap.flex"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	b, _ := os.ReadFile(filepath.Join(dir, "manifest.json"))
	var m hipsrc.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range m.Kernels {
		if want := k.ID + ".bwd.cu"; k.BwdSourceFile != want {
			t.Errorf("%s: bwd_source %q, want %q", k.ID, k.BwdSourceFile, want)
		}
		src, err := os.ReadFile(filepath.Join(dir, k.BwdSourceFile))
		if err != nil {
			t.Fatal(err)
		}
		body := strings.TrimRight(string(src), "\n")
		// codegen's bwdChoice: the warp-specialized backward without a mask,
		// with open columns (the soft-capped causal layer) or with columns
		// to each document's end (document_causal's monotone q range); its
		// ordered deterministic dQ (bwdDQOrdered) in the source, its entries
		// and its launch together. The lookup table's columns end.
		ws := k.ID == "capped_layer" || k.ID == "document_causal"
		wide := hipsrc.BwdChoice{WarpSpecialized: !k.HasMask || ws}
		tiles, err := hipsrc.BwdTileDefines(k.HeadDim, wide)
		if err != nil {
			t.Fatal(err)
		}
		ordered := k.BwdLaunch[hipsrc.NVIDIAWGMMA.String()].DQOrdered
		if ordered != ws {
			t.Errorf("%s: dq_ordered %v, want %v", k.ID, ordered, ws)
		}
		if ordered {
			tiles += hipsrc.BwdDQOrderDefine
		}
		if !strings.HasSuffix(body, strings.TrimRight(hipsrc.AttnFwd, "\n")+"\n"+strings.TrimRight(hipsrc.AttnFwdSM90, "\n")+"\n"+
			strings.TrimRight(hipsrc.AttnDecode, "\n")+"\n"+tiles+strings.TrimRight(hipsrc.AttnBwd, "\n")) ||
			!strings.HasPrefix(body, fmt.Sprintf("#define MASKC_HEAD_DIM %d\n", k.HeadDim)+hipsrc.Prelude[:200]) {
			t.Errorf("%s: the backward source is not the head dim, the prelude ... attn_fwd.h, attn_fwd_sm90.h, attn_decode.h, the tiles, attn_bwd.h", k.ID)
		}
		for _, e := range k.BwdEntries {
			if !strings.Contains(string(src), "maskc_attn_bwd") || !strings.Contains(string(src), e+"(") {
				t.Errorf("%s: backward source lacks entry point %s", k.ID, e)
			}
		}
		want, err := hipsrc.BwdLaunches(k.HeadDim, wide)
		if err != nil {
			t.Fatal(err)
		}
		if ordered {
			want = hipsrc.WithDQOrdered(want, k.HeadDim)
		}
		if !reflect.DeepEqual(k.BwdEntries, hipsrc.BwdEntryNamesFor(ordered)) || !reflect.DeepEqual(k.BwdLaunch, want) {
			t.Errorf("%s: backward launch fields %+v", k.ID, k)
		}
	}
}

// TestStagedOutput: genkernels writes its directory as `maskc compile -o`
// does (compiler.WriteDir): a second run replaces its own outputs and drops
// the ones it no longer writes, and a file it did not write is refused,
// leaving the directory as it was.
func TestStagedOutput(t *testing.T) {
	doc, lookup := "../../codegen/testdata/golden/document.flex", "../../codegen/testdata/golden/lookup.flex"
	tests := []struct {
		name     string
		user     string // a file written into DIR before the second run
		code     int
		stderrRx string
		want     []string // the .cu files in DIR after the second run
	}{
		{"rerun replaces own outputs", "", 0, "", []string{"document_causal.bwd.cu", "document_causal.cu"}},
		{"user file is not replaced", "document_causal.cu", 1, "not an output of an earlier genkernels",
			[]string{"block_lookup.bwd.cu", "block_lookup.cu", "document_causal.bwd.cu", "document_causal.cu", "per_head.bwd.cu", "per_head.cu"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var stdout, stderr strings.Builder
			if code := run([]string{"-o", dir, doc, lookup}, &stdout, &stderr); code != 0 {
				t.Fatalf("first run: exit %d\n%s", code, stderr.String())
			}
			if tt.user != "" {
				if err := os.WriteFile(filepath.Join(dir, tt.user), []byte("mine"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			stderr.Reset()
			if code := run([]string{"-o", dir, doc}, &stdout, &stderr); code != tt.code {
				t.Fatalf("second run: exit %d, want %d\n%s", code, tt.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.stderrRx) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderrRx, stderr.String())
			}
			got, err := filepath.Glob(filepath.Join(dir, "*.cu"))
			if err != nil {
				t.Fatal(err)
			}
			for i := range got {
				got[i] = filepath.Base(got[i])
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("DIR holds %v, want %v", got, tt.want)
			}
			if tt.user != "" {
				if b, _ := os.ReadFile(filepath.Join(dir, tt.user)); string(b) != "mine" {
					t.Errorf("%s was replaced", tt.user)
				}
			}
		})
	}
}
