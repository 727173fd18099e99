package codegen

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/maskc/maskc/hipsrc"
)

// TestBwdWS: a kernel without a mask, and under Options.BwdWS every kernel,
// takes the warp-specialized sm_90a backward (hipsrc.BwdChoice.WarpSpecialized)
// at head dim 128, but where the deterministic dQ is ordered (a diagonal mask
// with a transcendental score), which that kernel does not do: its source
// says MASKC_BWD_WS in the sm_90a branch and its sm_90a launch is 384 threads
// on 128-key tiles; every other platform's launch is the plain one. clang's
// CUDA front end then compiles the sm_90a build of each (the setmaxnreg of
// its producer and consumers in maskc_attn_bwd).
func TestBwdWS(t *testing.T) {
	clang, shim := needClang(t)
	dir := t.TempDir()
	sm90 := hipsrc.NVIDIAWGMMA.String()
	for i, tc := range []struct {
		file, attention string
		headDim         int
		option, want    bool
	}{
		{"../examples/full.flex", "", 0, false, true},
		{"../examples/full.flex", "", 64, false, false}, // no such tile at 64
		{"../examples/t5_bias.flex", "", 0, false, true},
		{"../examples/causal.flex", "", 0, false, false},
		{"../examples/causal.flex", "", 0, true, true},
		{"../examples/causal.flex", "", 64, true, false},
		{"../examples/alibi.flex", "alibi_layer", 0, true, true},
		{"../examples/document_causal.flex", "packed_layer", 0, true, true},
		{"../testdata/tilemasks/moba.flex", "moba", 0, true, true},
		{"../examples/softcap.flex", "capped_layer", 0, true, false}, // the ordered deterministic dQ
		{"../examples/causal.flex", "", 256, true, false},
	} {
		k := generateAttention(t, tc.file, tc.attention, Options{BwdWS: tc.option, HeadDim: tc.headDim})
		plain := generateAttention(t, tc.file, tc.attention, Options{HeadDim: tc.headDim})
		name := fmt.Sprintf("%s:%s@%d (option %v)", tc.file, tc.attention, k.HeadDim, tc.option)
		if got := strings.Contains(k.BwdSource, "#define MASKC_BWD_WS 1"); got != tc.want {
			t.Errorf("%s: the source asks for the warp-specialized backward: %v, want %v", name, got, tc.want)
		}
		for p, c := range k.BwdLaunch {
			want := plain.BwdLaunch[p]
			if p == sm90 && tc.want && tc.option {
				tile, _ := hipsrc.NVIDIAWGMMA.BwdTileOf(k.HeadDim, hipsrc.BwdChoice{WarpSpecialized: true})
				want = hipsrc.BwdLaunchConfig{BlockM: 64, BlockN: 128, Threads: 128, MainThreads: 384,
					SharedMemBytes: tile.SharedMemBytes(k.HeadDim), DQSharedMemBytes: tile.DQSharedMemBytes(k.HeadDim)}
			}
			if c != want || (p == sm90 && (c.MainThreads == 384) != tc.want) {
				t.Errorf("%s: %s backward launch %+v, want %+v", name, p, c, want)
			}
		}
		if !tc.want {
			continue
		}
		src := filepath.Join(dir, fmt.Sprintf("k%d.bwd.cu", i))
		if err := os.WriteFile(src, []byte(k.BwdSource), 0o644); err != nil {
			t.Fatal(err)
		}
		ir := clangIR(t, clang, shim, src, "-DMASKC_NV_WGMMA=1", fmt.Sprintf("-DMASKC_NV_WS=%d", b2i(k.WarpSpecialized)))
		if !strings.Contains(ir, "@maskc_attn_bwd(") || !strings.Contains(ir, "setmaxnreg.dec") ||
			!strings.Contains(ir, "setmaxnreg.inc") || !strings.Contains(ir, "cp.async.bulk.tensor.2d") {
			t.Errorf("%s: maskc_attn_bwd is not the warp-specialized kernel", name)
		}
	}
}
