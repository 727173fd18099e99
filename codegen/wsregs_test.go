package codegen

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestWSRegisterSplit compiles the warp-specialized sm_90a forward
// (attn_fwd_sm90.h) of the causal kernel with clang's CUDA front end at
// several setmaxnreg splits: the consumers' setmaxnreg.inc draws only on
// the registers the producer's setmaxnreg.dec gave back to the block, so a
// split whose increase is not covered never returns on the GPU (producer
// 32, consumers 240 hung its first launch on the H200, docs/kernel-decisions.md run
// 19x) and must fail to compile, even though it fits the register file.
// The default (40/232) and FA3's (24/240) build.
//
// Outside CI a missing clang skips the test; with CI=true it fails.
func TestWSRegisterSplit(t *testing.T) {
	clang, shim := needClang(t)
	dir := t.TempDir()
	k := generateAttention(t, "testdata/golden/causal.flex", "", Options{})
	if err := os.WriteFile(filepath.Join(dir, "causal.cu"), []byte(k.Source), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		producer, consumer int // 0: the file's default
		ok                 bool
	}{
		{0, 0, true},
		{24, 240, true},
		{32, 240, false}, // 32*128 + 240*256 = 65536 fits the file, but 136*128 < 72*256
		{40, 240, false},
		{48, 224, true},
		{40, 236, false}, // not a multiple of 8
	} {
		t.Run(fmt.Sprintf("%d_%d", c.producer, c.consumer), func(t *testing.T) {
			args := []string{"-x", "cuda", "--cuda-gpu-arch=sm_80", "-nocudainc", "-nocudalib", "--cuda-device-only",
				"-std=c++17", "-Xclang", "-target-feature", "-Xclang", "+ptx75", "-O0", "-S", "-emit-llvm",
				"-include", shim, "-DMASKC_NV_WGMMA=1", "-DMASKC_NV_WS=1", "-o", os.DevNull, "causal.cu"}
			if c.producer != 0 {
				args = append(args, fmt.Sprintf("-DMASKC_WS_PRODUCER_REGS=%d", c.producer),
					fmt.Sprintf("-DMASKC_WS_CONSUMER_REGS=%d", c.consumer))
			}
			cmd := exec.Command(clang, args...)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			switch {
			case c.ok && err != nil:
				t.Fatalf("does not build: %v\n%s", err, out)
			case !c.ok && err == nil:
				t.Fatalf("builds, but the split cannot work")
			case !c.ok && !strings.Contains(string(out), "setmaxnreg"):
				t.Fatalf("fails for another reason:\n%s", out)
			}
		})
	}
}
