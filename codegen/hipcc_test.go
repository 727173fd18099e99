package codegen

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/maskc/maskc/classify"
	"github.com/maskc/maskc/hipsrc"
)

// hipTargets are the AMD architectures every generated example is built for.
var hipTargets = []string{"gfx90a", "gfx940"}

// findObjdump locates an llvm-objdump that knows gfx940 (LLVM 15 or later):
// $MASKC_LLVM_OBJDUMP, then Debian's llvm-15 (installed with hipcc 5.2.3,
// whose clang is 15), then llvm-objdump-15 and llvm-objdump on PATH.
// Debian's /usr/bin/llvm-objdump is LLVM 14, which predates gfx940.
func findObjdump() string {
	for _, c := range []string{os.Getenv("MASKC_LLVM_OBJDUMP"), "/usr/lib/llvm-15/bin/llvm-objdump", "llvm-objdump-15", "llvm-objdump"} {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	return ""
}

// functionText is the disassembly of one function of an llvm-objdump -d
// listing: from its label to the next label.
func functionText(dis, name string) string {
	i := strings.Index(dis, "<"+name+">:")
	if i < 0 {
		return ""
	}
	rest := dis[i+len(name)+3:]
	if j := strings.Index(rest, ">:\n"); j >= 0 {
		if k := strings.LastIndex(rest[:j], "\n"); k >= 0 {
			return rest[:k]
		}
	}
	return rest
}

// TestHipccMFMA builds the full source of every example attention that
// classify sends to a generated kernel, plus a pre-pass kernel and an fp16 /
// head-dim-64 kernel from testdata, for gfx90a and gfx940 with Debian's
// hipcc, and checks that each code object's disassembly uses MFMA
// instructions (v_mfma_*) and defines maskc_attn_fwd; the same for each
// kernel's backward source (BwdSource: every BwdEntries entry point, MFMA
// in maskc_attn_bwd and maskc_attn_bwd_dq themselves).
//
// How: one hipcc run per target, both in parallel, compiles every file
// (`hipcc -x hip --offload-arch=gfx90a --cuda-device-only
// --no-gpu-bundle-output -O3 -c *.cu`), which writes one unbundled code
// object per file, NAME-hip-amdgcn-amd-amdhsa-gfx90a.out; `llvm-objdump -d`
// (LLVM 15) disassembles them.
//
// Outside CI a missing hipcc skips the test; with CI=true it fails.
func TestHipccMFMA(t *testing.T) {
	hipcc, err := exec.LookPath("hipcc")
	objdump := findObjdump()
	if err != nil || objdump == "" {
		msg := "hipcc and llvm-objdump (LLVM 15) are needed: apt-get install hipcc (it depends on llvm-15)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
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
		if err := os.WriteFile(filepath.Join(dir, name+".cu"), []byte(k.Source), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".bwd.cu"), []byte(k.BwdSource), 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name, name+".bwd")
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

	// One hipcc run per target, the two in parallel (2 cores here).
	start := time.Now()
	errs := make(chan error, len(hipTargets))
	for _, arch := range hipTargets {
		go func() {
			args := []string{"-x", "hip", "--cuda-device-only", "--no-gpu-bundle-output", "-O3", "-c", "--offload-arch=" + arch}
			for _, n := range names {
				args = append(args, n+".cu")
			}
			cmd := exec.Command(hipcc, args...)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("hipcc %s: %v\n%s", strings.Join(args, " "), err, out)
				return
			}
			errs <- nil
		}()
	}
	for range hipTargets {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("hipcc built %d kernels x %d targets in %v", len(names), len(hipTargets), time.Since(start).Round(time.Millisecond))
	mfma := regexp.MustCompile(`\bv_mfma_\w+`)
	for _, n := range names {
		for _, arch := range hipTargets {
			obj := filepath.Join(dir, n+"-hip-amdgcn-amd-amdhsa-"+arch+".out")
			dis, err := exec.Command(objdump, "-d", obj).CombinedOutput()
			if err != nil {
				t.Errorf("%s %s: llvm-objdump: %v\n%s", n, arch, err, dis)
				continue
			}
			if !strings.Contains(string(dis), "<maskc_attn_fwd>:") {
				t.Errorf("%s %s: no maskc_attn_fwd in the code object", n, arch)
			}
			text := string(dis)
			if strings.HasSuffix(n, ".bwd") {
				// Every backward entry point is there, and both matrix
				// kernels (dK/dV and the deterministic dQ) use MFMA
				// themselves.
				for _, e := range BwdEntries {
					if !strings.Contains(text, "<"+e+">:") {
						t.Errorf("%s %s: no %s in the code object", n, arch, e)
					}
				}
				if ops := mfma.FindAllString(functionText(text, hipsrc.BwdDQEntry), -1); len(ops) == 0 {
					t.Errorf("%s %s: %s has no MFMA instruction", n, arch, hipsrc.BwdDQEntry)
				}
				text = functionText(text, hipsrc.BwdMainEntry)
			}
			ops := mfma.FindAllString(text, -1)
			if len(ops) == 0 {
				t.Errorf("%s %s: the disassembly has no MFMA instruction", n, arch)
				continue
			}
			t.Logf("%s %s: %d MFMA instructions (%s)", n, arch, len(ops), ops[0])
		}
	}
}
