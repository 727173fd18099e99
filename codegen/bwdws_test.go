package codegen

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/maskc/maskc/hipsrc"
)

// TestBwdWS: a kernel without a mask, with open columns, long columns or
// wide columns with a monotone q range, and under Options.BwdWS every
// kernel, takes the warp-specialized sm_90a backward (hipsrc.BwdChoice.WarpSpecialized)
// at head dim 128, and at 64 on two-tile steps where pairSteps says so: its source says MASKC_BWD_WS in the sm_90a branch and its
// sm_90a launch is 384 threads on 128-key tiles, dq_ordered as without the
// option; every other platform's launch is the plain one. clang's CUDA front
// end then compiles the sm_90a build of each (the setmaxnreg of its producer
// and consumers in maskc_attn_bwd) and, where the deterministic dQ is
// ordered (open columns, a monotone q range, a diagonal mask with a
// transcendental score, or Options.BwdDQOrder),
// maskc_attn_bwd_ordered with the dQ writer's turns.
func TestBwdWS(t *testing.T) {
	clang, shim := needClang(t)
	dir := t.TempDir()
	sm90 := hipsrc.NVIDIAWGMMA.String()
	for i, tc := range []struct {
		file, attention string
		headDim         int
		option, want    bool // Options.BwdWS; the warp-specialized backward
		order, ordered  bool // Options.BwdDQOrder; the ordered deterministic dQ
	}{
		{"../examples/full.flex", "", 0, false, true, false, true},
		{"../examples/full.flex", "", 0, false, true, true, true},
		{"../examples/full.flex", "", 64, false, true, false, true}, // two-tile steps (pairSteps), dQ ordered
		{"../examples/t5_bias.flex", "", 0, false, true, false, true},
		{"../examples/causal.flex", "", 0, false, true, false, true},    // open columns
		{"../examples/prefix_lm.flex", "", 0, false, true, false, true}, // open columns, some from row 0
		{"../examples/prefix_lm.flex", "", 0, true, true, false, true},
		{"../examples/sliding_window.flex", "", 0, false, true, false, true},                  // a window of 1025 keys, a monotone q range
		{"../examples/sliding_window.flex", "local_512_layer", 0, false, false, false, false}, // 513 keys: short columns
		{"../examples/sliding_window.flex", "local_512_layer", 0, true, true, false, true},
		{"../examples/sliding_window.flex", "", 0, true, true, true, true},
		{"../examples/dilated_window.flex", "", 0, false, true, false, true},              // wide columns, a monotone q range
		{"../gpu/bench_cases_ext/head_windows.flex", "", 0, false, true, false, true},     // long columns, a monotone q range
		{"../gpu/bench_cases_ext/block_diffusion.flex", "", 0, false, true, false, false}, // long columns of a union: dQ kernel
		{"../examples/causal.flex", "", 64, true, true, false, true},
		{"../examples/alibi.flex", "alibi_layer", 64, false, false, false, false}, // a score: no tile at 64
		{"../examples/alibi.flex", "alibi_layer", 0, true, true, false, true},
		{"../testdata/ported/transfusion.flex", "", 0, false, true, false, true},          // open columns; rows free of q
		{"../examples/document_causal.flex", "packed_layer", 0, false, true, false, true}, // columns to the document's end
		{"../examples/document_causal.flex", "packed_layer", 0, true, true, false, true},
		{"../testdata/tilemasks/moba.flex", "moba", 0, true, true, false, false},
		{"../examples/softcap.flex", "capped_layer", 0, false, true, false, true},
		{"../examples/causal.flex", "", 256, true, false, false, false},
	} {
		k := generateAttention(t, tc.file, tc.attention, Options{BwdWS: tc.option, BwdDQOrder: tc.order, HeadDim: tc.headDim})
		plain := generateAttention(t, tc.file, tc.attention, Options{BwdDQOrder: tc.order, HeadDim: tc.headDim})
		name := fmt.Sprintf("%s:%s@%d (option %v, order %v)", tc.file, tc.attention, k.HeadDim, tc.option, tc.order)
		ordered := strings.Contains(k.BwdSource, hipsrc.BwdDQOrderDefine)
		if got := strings.Contains(k.BwdSource, "#define MASKC_BWD_WS 1"); got != tc.want {
			t.Errorf("%s: the source asks for the warp-specialized backward: %v, want %v", name, got, tc.want)
		}
		for p, c := range k.BwdLaunch {
			want := plain.BwdLaunch[p]
			if p == sm90 && tc.want && tc.option {
				tile, _ := hipsrc.NVIDIAWGMMA.BwdTileOf(k.HeadDim, bwdChoice(k, Options{BwdWS: true}))
				want = hipsrc.BwdLaunchConfig{BlockM: 64, BlockN: 128, Threads: 128, MainThreads: 384,
					SharedMemBytes: tile.SharedMemBytes(k.HeadDim), DQSharedMemBytes: tile.DQSharedMemBytes(k.HeadDim),
					DQOrdered: tc.ordered, TensorMaps: &hipsrc.TensorMapRows{Q: tile.StepRows(), KV: 128}}
			}
			if !sameBwdLaunch(c, want) || (p == sm90 && (c.MainThreads == 384) != tc.want) {
				t.Errorf("%s: %s backward launch %+v, want %+v", name, p, c, want)
			}
			// The launcher's tensor maps: the warp-specialized kernel's (a
			// step's rows of Q and dO, 128 keys), no other's.
			if ws := p == sm90 && tc.want; (c.TensorMaps != nil) != ws {
				t.Errorf("%s: %s backward launch's tensor maps %+v; want them: %v", name, p, c.TensorMaps, ws)
			}
		}
		if !tc.want {
			if ordered != tc.ordered {
				t.Errorf("%s: the source asks for the ordered dQ: %v, want %v", name, ordered, tc.ordered)
			}
			continue
		}
		src := filepath.Join(dir, fmt.Sprintf("k%d.bwd.cu", i))
		if err := os.WriteFile(src, []byte(k.BwdSource), 0o644); err != nil {
			t.Fatal(err)
		}
		ir := clangIR(t, clang, shim, src, "-DMASKC_NV_WGMMA=1", fmt.Sprintf("-DMASKC_NV_WS=%d", b2i(k.WarpSpecialized)))
		main := irFunc(ir, "maskc_attn_bwd")
		if main == "" || !strings.Contains(main, "setmaxnreg.dec") || !strings.Contains(main, "setmaxnreg.inc") {
			t.Errorf("%s: maskc_attn_bwd is not the warp-specialized kernel", name)
		}
		// Its copies through the launcher's 4-D maps, none built by a block.
		if !strings.Contains(main, "cp.async.bulk.tensor.4d") || strings.Contains(main, "tensormap.replace") {
			t.Errorf("%s: maskc_attn_bwd does not copy through the launcher's maps alone", name)
		}
		if got := strings.Contains(ir, "@maskc_attn_bwd_ordered(") && strings.Contains(ir, "ld.acquire.gpu.global.u32") &&
			strings.Contains(ir, "red.release.gpu.global.add.u32"); got != ordered {
			t.Errorf("%s: maskc_attn_bwd_ordered with the writer's turns: %v, want %v", name, got, ordered)
		}
		if ordered != tc.ordered {
			t.Errorf("%s: the source asks for the ordered dQ: %v, want %v", name, ordered, tc.ordered)
		}
	}
}

// sameBwdLaunch reports whether two backward launches are equal, their
// tensor maps' rows by value.
func sameBwdLaunch(a, b hipsrc.BwdLaunchConfig) bool {
	am, bm := a.TensorMaps, b.TensorMaps
	a.TensorMaps, b.TensorMaps = nil, nil
	return a == b && (am == nil) == (bm == nil) && (am == nil || *am == *bm)
}
