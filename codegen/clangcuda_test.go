package codegen

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/maskc/maskc/classify"
)

// findClang locates a clang with the NVPTX back end: $MASKC_CLANG, then
// Debian's clang 15 (installed with hipcc, which depends on it), then
// clang-15 and clang on PATH.
func findClang() string {
	for _, c := range []string{os.Getenv("MASKC_CLANG"), "/usr/lib/llvm-15/bin/clang++", "clang++-15", "clang++"} {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	return ""
}

// TestClangCUDA compiles the backward source (the forward's source followed
// by attn_bwd.h) of every example attention that classify sends to a
// generated kernel, plus a pre-pass kernel and an fp16 / head-dim-64 kernel
// from testdata, for the two NVIDIA back ends with clang's CUDA front end
// (device only, to LLVM IR): mma.sync (MASKC_NV_WGMMA=0) and the sm_90a
// warpgroup-MMA kernels (MASKC_NV_WGMMA=1). No NVIDIA compiler is needed:
// testdata/nvrtc_shim.h declares what NVRTC builds in. It checks that every
// source compiles and that every forward and backward entry point is
// defined, with wgmma in the sm_90a build (the forward's and the
// backward's: the backward alone issues transposed-A products, "p, 1, 1,
// 1, 1") and none in the mma.sync build. The PTX itself is only assembled
// on the GPU (gpu/bwd.sh).
//
// Outside CI a missing clang skips the test; with CI=true it fails.
func TestClangCUDA(t *testing.T) {
	clang := findClang()
	if clang == "" {
		msg := "clang (LLVM 15, with NVPTX) is needed: apt-get install hipcc (it depends on clang-15)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	shim, err := filepath.Abs("testdata/nvrtc_shim.h")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var names []string
	write := func(file, attention string) {
		p := loadProgram(t, file)
		a := p.Attention(attention)
		if a == nil {
			t.Fatalf("%s has no attention %s", file, attention)
		}
		k, diags := Generate(p, a, Options{})
		if diags.HasErrors() {
			t.Fatalf("%s: %s", file, diags.Render())
		}
		name := strings.TrimSuffix(filepath.Base(file), ".flex") + "_" + k.Name
		if err := os.WriteFile(filepath.Join(dir, name+".bwd.cu"), []byte(k.BwdSource), 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	examples, _ := filepath.Glob("../examples/*.flex")
	for _, f := range examples {
		plan, _ := classify.Classify(loadProgram(t, f), classify.Options{})
		for _, d := range plan.Attentions {
			if d.Pattern == "generated" {
				write(f, d.Name)
			}
		}
	}
	if len(names) == 0 {
		t.Fatal("no example is classified as generated")
	}
	write("testdata/golden/lookup.flex", "per_head")        // pre-pass sparsity
	write("testdata/golden/sliding_window.flex", "sliding") // fp16, head dim 64

	entries := append([]string{"maskc_attn_fwd"}, BwdEntries...)
	for _, wg := range []int{0, 1} {
		for _, n := range names {
			ll := filepath.Join(dir, fmt.Sprintf("%s.wg%d.ll", n, wg))
			args := []string{"-x", "cuda", "--cuda-gpu-arch=sm_80", "-nocudainc", "-nocudalib", "--cuda-device-only",
				"-std=c++17", "-Xclang", "-target-feature", "-Xclang", "+ptx75", "-O0", "-S", "-emit-llvm",
				"-include", shim, fmt.Sprintf("-DMASKC_NV_WGMMA=%d", wg), "-o", ll, n + ".bwd.cu"}
			cmd := exec.Command(clang, args...)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s (MASKC_NV_WGMMA=%d): %v\n%s", n, wg, err, out)
			}
			b, err := os.ReadFile(ll)
			if err != nil {
				t.Fatal(err)
			}
			ir := string(b)
			for _, e := range entries {
				if !strings.Contains(ir, "@"+e+"(") {
					t.Errorf("%s (MASKC_NV_WGMMA=%d): no entry point %s", n, wg, e)
				}
			}
			hasWG := strings.Contains(ir, "wgmma.mma_async")
			hasBwdWG := strings.Contains(ir, "p, 1, 1, 1, 1;")
			if wg == 1 && (!hasWG || !hasBwdWG) {
				t.Errorf("%s: the sm_90a build lacks wgmma (any %v, the backward's dQ product %v)", n, hasWG, hasBwdWG)
			}
			if wg == 0 && hasWG {
				t.Errorf("%s: the mma.sync build has wgmma", n)
			}
		}
	}
	t.Logf("clang built %d backward sources x 2 NVIDIA back ends", len(names))
}
