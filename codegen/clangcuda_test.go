package codegen

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/maskc/maskc/classify"
	"github.com/maskc/maskc/hipsrc"
)

// findClang locates a clang with the NVPTX back end: $MASKC_CLANG, then
// Debian's clang 15 (installed with hipcc, which depends on it), then
// clang-15 and clang on PATH.
// needClang returns the clang of findClang and the absolute path of the
// NVRTC shim header that the NVIDIA builds include; outside CI a missing
// clang skips the test, with CI=true it fails.
func needClang(t *testing.T) (clang, shim string) {
	t.Helper()
	if clang = findClang(); clang == "" {
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
	return clang, shim
}

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
// from testdata and three kernels at head dim 256, for the two NVIDIA back
// ends with clang's CUDA front end (device only, to LLVM IR): mma.sync
// (MASKC_NV_WGMMA=0) and the sm_90a warpgroup-MMA kernels
// (MASKC_NV_WGMMA=1), the latter also with the warp-specialized forward
// (MASKC_NV_WS=1, attn_fwd_sm90.h). No NVIDIA compiler is needed:
// testdata/nvrtc_shim.h declares what NVRTC builds in. It checks that every
// source compiles and that every forward and backward entry point is
// defined, with wgmma in the sm_90a build (the forward's, m64n256 at head dim
// 256, and the backward's: the backward alone issues transposed-A products,
// "p, 1, 1, 1, 1"; at head dim 256 the head-dim split's m64n32 S^T and its
// dV, dK products from shared P^T, dS^T, "p, 1, 1, 0, 1") and none in the
// mma.sync build.
// The PTX itself is only assembled on the GPU (gpu/bwd.sh).
//
// Outside CI a missing clang skips the test; with CI=true it fails.
func TestClangCUDA(t *testing.T) {
	clang, shim := needClang(t)
	dir := t.TempDir()
	var names []string
	headDims := map[string]int{}
	bwdWS := map[string]bool{} // sources with the warp-specialized backward
	writeOpts := func(file, attention string, opts Options) {
		k := generateAttention(t, file, attention, opts)
		name := strings.TrimSuffix(filepath.Base(file), ".flex") + "_" + k.Name
		if opts.HeadDim != 0 {
			name += fmt.Sprintf("_d%d", opts.HeadDim)
		}
		if opts.WSWalks {
			if !k.WSWalk || generateAttention(t, file, attention, Options{HeadDim: opts.HeadDim}).WSWalk {
				return // no walk, or the default build walks already (a block selection)
			}
			name += "_wswalk"
		}
		if opts.BwdWS {
			// The warp-specialized backward on a masked kernel (genkernels -bwd-ws).
			if !strings.Contains(k.BwdSource, "#define MASKC_BWD_WS 1") {
				t.Fatalf("%s %s: -bwd-ws source does not ask for the warp-specialized backward", file, attention)
			}
			name += "_bwdws"
		}
		if opts.BwdDQOrder {
			// The ordered deterministic dQ (genkernels -bwd-dq-order).
			if !strings.Contains(k.BwdSource, hipsrc.BwdDQOrderDefine) {
				t.Fatalf("%s %s: -bwd-dq-order source does not ask for the ordered dQ", file, attention)
			}
			name += "_dqorder"
		}
		headDims[name] = k.HeadDim
		bwdWS[name] = strings.Contains(k.BwdSource, "#define MASKC_BWD_WS 1")
		if err := os.WriteFile(filepath.Join(dir, name+".bwd.cu"), []byte(k.BwdSource), 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	write := func(file, attention string, headDim int) { writeOpts(file, attention, Options{HeadDim: headDim}) }
	examples, _ := filepath.Glob("../examples/*.flex")
	for _, f := range examples {
		plan, _ := classify.Classify(loadProgram(t, f), classify.Options{})
		for _, d := range plan.Attentions {
			if d.Pattern == "generated" {
				write(f, d.Name, 0)
			}
		}
	}
	if len(names) == 0 {
		t.Fatal("no example is classified as generated")
	}
	// The tile-map corpus (issue 27): block selection walks and full
	// tests, the rewritten // and % relations.
	corpus, _ := filepath.Glob("../testdata/tilemasks/*.flex")
	if len(corpus) < 12 {
		t.Fatalf("found %d corpus masks, want at least 12", len(corpus))
	}
	for _, f := range corpus {
		plan, _ := classify.Classify(loadProgram(t, f), classify.Options{})
		for _, d := range plan.Attentions {
			write(f, d.Name, 0)
			// The warp-specialized forward walking the mask's intervals (Options.WSWalks).
			writeOpts(f, d.Name, Options{WSWalks: true})
		}
	}
	// The warp-specialized backward, which codegen gives kernels without a
	// mask, on masked kernels (the experiment of genkernels -bwd-ws): a block
	// selection, segments (a warp-collective class) and pre-pass flags, each
	// class computed by the producer warp.
	writeOpts("../testdata/tilemasks/moba.flex", "moba", Options{BwdWS: true})
	writeOpts("../examples/document_causal.flex", "packed_layer", Options{BwdWS: true})
	writeOpts("testdata/golden/lookup.flex", "per_head", Options{BwdWS: true})
	// The ordered dQ: document-causal (warp-specialized; a segments search
	// in the envelope, its own range where the range is monotone), a short
	// window on the 64 x 64 tiles (its own range as the envelope), a
	// soft-capped window, head dim 64.
	writeOpts("../examples/document_causal.flex", "packed_layer", Options{BwdDQOrder: true})
	writeOpts("../examples/sliding_window.flex", "local_512_layer", Options{BwdDQOrder: true})
	writeOpts("../examples/softcap.flex", "capped_layer", Options{BwdDQOrder: true})
	writeOpts("../examples/gpt_oss.flex", "layer_0", Options{BwdDQOrder: true})
	// Two-tile steps of the warp-specialized backward at head dim 64
	// (pairSteps): no mask, causal, and causal with its deterministic dQ
	// ordered (genkernels -bwd-dq-order).
	write("../examples/full.flex", "", 64)
	write("../examples/causal.flex", "", 64)
	writeOpts("../examples/causal.flex", "", Options{HeadDim: 64, BwdDQOrder: true})
	write("testdata/golden/lookup.flex", "per_head", 0)                 // pre-pass sparsity
	write("../testdata/ported/gemma4_sliding.flex", "sliding_layer", 0) // the pre-pass tests its terms
	write("testdata/golden/sliding_window.flex", "sliding", 0)          // fp16, head dim 64
	write("testdata/golden/trig.flex", "rotary", 0)                     // sin, cos, tan, erf; i8, u8, i16 buffers
	write("testdata/golden/narrow.flex", "narrow", 0)                   // as CDNA builds it
	write("testdata/golden/scalar.flex", "shifted", 0)                  // 0-d buffers, a learned scalar's gradient
	write("testdata/golden/scalar.flex", "blocks", 0)                   // a floor-divided per-block table
	// Head dim 256: the mma.sync kernel's 8-warp shape, the wgmma forward's
	// m64n256 P.V, the wgmma backward split by the head dim on sm_90a; with
	// a buffer gradient, with the pre-pass, with a segments search.
	write("../examples/softcap.flex", "capped_layer", 256)
	write("../examples/relative_bias.flex", "biased_layer", 256)
	write("testdata/golden/lookup.flex", "per_head", 256)
	write("../examples/document_causal.flex", "packed_layer", 256)

	entries := append([]string{"maskc_attn_fwd", hipsrc.DecodeEntry, hipsrc.DecodeMergeEntry}, BwdEntries...)
	// wg 2: the sm_90a build with the warp-specialized forward
	// (hipsrc.WSOptions), whose IR must show its producer/consumer split.
	for _, wg := range []int{0, 1, 2} {
		for _, n := range names {
			ir := clangIR(t, clang, shim, filepath.Join(dir, n+".bwd.cu"),
				fmt.Sprintf("-DMASKC_NV_WGMMA=%d", min(wg, 1)), fmt.Sprintf("-DMASKC_NV_WS=%d", wg/2))
			for _, e := range entries {
				if !strings.Contains(ir, "@"+e+"(") {
					t.Errorf("%s (MASKC_NV_WGMMA=%d): no entry point %s", n, wg, e)
				}
			}
			hasWG := strings.Contains(ir, "wgmma.mma_async")
			hasBwdWG := strings.Contains(ir, "p, 1, 1, 1, 1;")
			fwd, bwd := irFunc(ir, "maskc_attn_fwd"), irFunc(ir, "maskc_attn_bwd")
			ws := strings.Contains(fwd, "setmaxnreg.inc") && strings.Contains(ir, "cp.async.mbarrier.arrive.noinc")
			if ws != (wg == 2) {
				t.Errorf("%s (build %d): warp-specialized forward %v", n, wg, ws)
			}
			// The warp-specialized backward (MASKC_BWD_WS), on sm_90a only.
			if got, want := strings.Contains(bwd, "setmaxnreg.inc"), wg >= 1 && bwdWS[n]; got != want {
				t.Errorf("%s (build %d): warp-specialized backward %v, want %v", n, wg, got, want)
			}
			// Every head dim's backward is the warpgroup kernel on sm_90a
			// (MASKC_BWD_WG), split by the head dim at 256 (MASKC_BWD_SPLIT_D).
			if wg >= 1 && (!hasWG || !hasBwdWG) {
				t.Errorf("%s: the sm_90a build: wgmma %v, the backward's dQ product %v", n, hasWG, hasBwdWG)
			}
			split := strings.Contains(ir, "m64n32k16") && strings.Contains(ir, "p, 1, 1, 0, 1;")
			if wg >= 1 && split != (headDims[n] == 256) {
				t.Errorf("%s (build %d): the head-dim split backward's products %v at head dim %d", n, wg, split, headDims[n])
			}
			if wg >= 1 && headDims[n] == 256 && !strings.Contains(ir, "m64n256k16") {
				t.Errorf("%s (build %d): head dim 256 without the m64n256k16 P.V product", n, wg)
			}
			if wg == 0 && hasWG {
				t.Errorf("%s: the mma.sync build has wgmma", n)
			}
		}
	}
	t.Logf("clang built %d backward sources x 3 NVIDIA builds", len(names))
}

// TestBwdSwitchesResolve checks, through clang's preprocessor on the sm_90a
// build, which backward switches of hipsrc/attn_bwd.h the generated sources
// turn on: the warpgroup-MMA backward at head dim 128 with dQ by bulk
// reductions, the class-free walk (MASKC_BWD_CLS_FREE_ON) exactly where a
// closed-form mask reads a buffer per key (document's segment ids, codegen's
// MASKC_MASK_COL_READS) or has no full tile (MASKC_MASK_PER_ELEMENT:
// dilated windows), and the tile classes computed ahead
// (MASKC_BWD_CLS_AHEAD_ON) for the pre-pass flags and block selections,
// one thread a tile (MASKC_BWD_CLS_LANES) where no class searches a
// segments buffer (a warp-collective search). A renamed generated
// define would silently turn the walk back to one class per step (device
// run 19x: document's fwd+bwd 0.698x of FlexAttention with classes ahead,
// 0.630x without; run 21x: 0.797x class-free).
func TestBwdSwitchesResolve(t *testing.T) {
	clang, shim := needClang(t)
	dir := t.TempDir()
	// A block selection with no full tile (the remainder is evaluated per
	// element): class-free otherwise, it keeps its classes, which hold the
	// selection test (MASKC_KV_SELECTION), computed ahead.
	perElementSel := filepath.Join(dir, "sel_per_element.flex")
	if err := os.WriteFile(perElementSel, []byte(maskCaseSource("buffer sel: i32[H, 64]\n",
		"kv <= q and (q + kv) % 2 == 0 and sel[h, q // 128] == kv // 128", "")), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file, attention    string
		ahead, lanes, free bool
	}{
		{"../testdata/tilemasks/moba.flex", "moba", true, true, false},
		{"../testdata/tilemasks/bigbird.flex", "bigbird", true, true, false},
		{perElementSel, "a", true, true, false},
		{"../gpu/bench_cases/document.flex", "document", false, false, true},
		{"../gpu/bench_cases/dilated2048.flex", "dilated2048", false, false, true},
		{"testdata/golden/lookup.flex", "per_head", true, true, false},              // pre-pass flags
		{"../testdata/tilemasks/multimodal.flex", "multimodal", true, false, false}, // pre-pass, segment searches
		{"../gpu/bench_cases/causal.flex", "causal", false, false, false},
		{"../gpu/bench_cases/prefix2048.flex", "prefix2048", false, false, false},
		{"../gpu/bench_cases/causal_alibi.flex", "causal_alibi", false, false, false},
		{"../gpu/bench_cases/full.flex", "full", false, false, false},
	} {
		k := generateAttention(t, tc.file, tc.attention, Options{})
		src := filepath.Join(dir, tc.attention+".bwd.cu")
		if err := os.WriteFile(src, []byte(k.BwdSource), 0o644); err != nil {
			t.Fatal(err)
		}
		defs := resolvedDefines(t, clang, shim, src, "1")
		want := map[string]string{
			"MASKC_BWD_WG":           "1",
			"MASKC_BWD_CLS_AHEAD_ON": "0",
			"MASKC_BWD_CLS_FREE_ON":  "0",
			"MASKC_BWD_CLS_LANES":    "0",
		}
		if tc.ahead {
			want["MASKC_BWD_CLS_AHEAD_ON"] = "1"
		}
		if tc.lanes {
			want["MASKC_BWD_CLS_LANES"] = "1"
		}
		if tc.free {
			want["MASKC_BWD_CLS_FREE_ON"] = "1"
		}
		if sel := k.sparsity.kind == SparsityAnalytic && selWalk(k.sparsity); sel != (defs["MASKC_KV_SELECTION"] == "1") {
			t.Errorf("%s: selection walk %v, MASKC_KV_SELECTION %q", tc.file, sel, defs["MASKC_KV_SELECTION"])
		}
		if tc.file == perElementSel && defs["MASKC_MASK_PER_ELEMENT"] != "1" {
			t.Errorf("%s: has a full tile (MASKC_MASK_PER_ELEMENT %q): not the case it is here for", tc.file, defs["MASKC_MASK_PER_ELEMENT"])
		}
		for name, v := range want {
			if defs[name] != v {
				t.Errorf("%s: %s = %q, want %s", tc.file, name, defs[name], v)
			}
		}
	}
}

// resolvedDefines preprocesses the generated CUDA source src with clang's
// CUDA front end (device side, sm_80, MASKC_NV_WGMMA=wgmma) and returns
// every object-like macro that ends up defined with a one-token value:
// which of hipsrc's switches a generated kernel turns on.
func resolvedDefines(t *testing.T, clang, shim, src, wgmma string) map[string]string {
	t.Helper()
	cmd := exec.Command(clang, "-x", "cuda", "--cuda-gpu-arch=sm_80", "-nocudainc", "-nocudalib", "--cuda-device-only",
		"-std=c++17", "-E", "-dM", "-include", shim, "-DMASKC_NV_WGMMA="+wgmma, src)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", filepath.Base(src), err, out)
	}
	defs := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "#define" {
			defs[f[1]] = f[2]
		}
	}
	return defs
}

// wsKeyRangeCases are warp-specialized forwards of each kind of key-tile
// range that the sm_90a variant tests build: full attention, analytic
// ranges (causal; a window, fp16 at head dim 64), a score mod, and two
// that walk their key tiles (Kernel.WSWalk): a block selection, whose walk
// reads its buffer, and block-causal's long columns, in closed form.
var wsKeyRangeCases = []struct {
	file, attention string
	walks           bool // the forward walks its key tiles (Kernel.WSWalk)
}{
	{"../examples/full.flex", "", false},
	{"testdata/golden/sliding_window.flex", "sliding", false},
	{"../examples/causal.flex", "", false},
	{"../examples/alibi.flex", "alibi_layer", false},
	{"../testdata/tilemasks/moba.flex", "moba", true},
	{"../gpu/bench_cases_ext/block_causal.flex", "block_causal", true},
}

// wsIRCheck is one build of checkWSForwardIR: its -D options and whether
// the marker is wanted in a kernel's forward.
type wsIRCheck struct {
	options []string
	want    func(k *Kernel) bool
}

// checkWSForwardIR compiles each of wsKeyRangeCases on the sm_90a
// warp-specialized build with each check's options and checks that the IR
// of its maskc_attn_fwd holds marker exactly where the check wants it
// (what names the marker in the failure).
func checkWSForwardIR(t *testing.T, what, marker string, checks []wsIRCheck) {
	t.Helper()
	clang, shim := needClang(t)
	dir := t.TempDir()
	for i, tc := range wsKeyRangeCases {
		k := generateAttention(t, tc.file, tc.attention, Options{})
		if !k.WarpSpecialized || k.WSWalk != tc.walks {
			t.Fatalf("%s: warp-specialized %v, walks %v", tc.file, k.WarpSpecialized, k.WSWalk)
		}
		src := filepath.Join(dir, fmt.Sprintf("k%d.cu", i))
		if err := os.WriteFile(src, []byte(k.Source), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, c := range checks {
			ir := clangIR(t, clang, shim, src, append([]string{"-DMASKC_NV_WGMMA=1", "-DMASKC_NV_WS=1"}, c.options...)...)
			fwd := irFunc(ir, "maskc_attn_fwd")
			if fwd == "" || !strings.Contains(fwd, "setmaxnreg.inc") {
				t.Fatalf("%s %v: no warp-specialized maskc_attn_fwd", tc.file, c.options)
			}
			if got, want := strings.Contains(fwd, marker), c.want(k); got != want {
				t.Errorf("%s %v: %s %v, want %v", tc.file, c.options, what, got, want)
			}
		}
	}
}

// always and never are wsIRCheck wants: on every kernel, on none.
func always(*Kernel) bool { return true }
func never(*Kernel) bool  { return false }

// TestClangCUDAOverlap compiles the warp-specialized forward's two
// consumer steps on the sm_90a build of kernels of each kind of key-tile
// range: the intra-warpgroup overlap
// (a wait for all but the last committed MMA group, the Q.K^T issued before
// the last tile's P.V) where codegen writes MASKC_WS_OVERLAP (every kernel
// here, the block selection's walk too) or -DMASKC_WS_OVERLAP=1 asks for
// it, the sequential step under -DMASKC_WS_OVERLAP=0.
func TestClangCUDAOverlap(t *testing.T) {
	// maskc_wg_wait_n<1>, inlined (it is always_inline, even at -O0)
	const waitAllButOne = `"wgmma.wait_group.sync.aligned $0;", "n,~{memory}"(i32 1)`
	checkWSForwardIR(t, "overlapped consumer step", waitAllButOne, []wsIRCheck{
		{nil, always},
		{[]string{"-DMASKC_WS_OVERLAP=0"}, never},
		{[]string{"-DMASKC_WS_OVERLAP=1"}, always},
	})
}

// TestClangCUDAHostMaps compiles the warp-specialized forward on the sm_90a
// build of kernels of each kind of key-tile range and checks that it copies
// through the launcher's 4-D maps (MaskcTensorMaps), builds none itself (no
// tensormap.replace) and issues Q's copy right after the mbarriers'
// initialisation (fenced for the copy engine), before the block barrier.
func TestClangCUDAHostMaps(t *testing.T) {
	// The launch that asks the launcher for them, with the boxes' rows the
	// kernel copies: the forward's block_m and its key tile (not the
	// platform's block_n); no other platform's launch.
	for _, tc := range wsKeyRangeCases {
		k := generateAttention(t, tc.file, tc.attention, Options{})
		for p, c := range k.Launch {
			want := (*hipsrc.TensorMapRows)(nil)
			if p == hipsrc.NVIDIAWGMMA.String() {
				want = &hipsrc.TensorMapRows{Q: hipsrc.BlockM, KV: hipsrc.WSBlockN(k.HeadDim)}
			}
			if (c.TensorMaps == nil) != (want == nil) || want != nil && *c.TensorMaps != *want {
				t.Errorf("%s: %s launch's tensor maps %+v, want %+v", tc.file, p, c.TensorMaps, want)
			}
		}
	}
	const load4 = "cp.async.bulk.tensor.4d.shared::cluster.global"
	checkWSForwardIR(t, "copies through the launcher's 4-D maps", load4, []wsIRCheck{{nil, always}})
	checkWSForwardIR(t, "maps built by the block", "tensormap.replace", []wsIRCheck{{nil, never}})
	checkWSForwardIR(t, "Q's copy before the barrier", "fence.mbarrier_init.release.cluster;", []wsIRCheck{
		{nil, always},
	})
}

// clangIR builds the CUDA source file src with clang's CUDA front end as
// TestClangCUDA does (device only, to LLVM IR at -O0, through the NVRTC shim)
// with the options given (-D switches) and returns the IR; a build that
// fails fails the test.
func clangIR(t *testing.T, clang, shim, src string, options ...string) string {
	t.Helper()
	ll := src + ".ll"
	args := append([]string{"-x", "cuda", "--cuda-gpu-arch=sm_80", "-nocudainc", "-nocudalib", "--cuda-device-only",
		"-std=c++17", "-Xclang", "-target-feature", "-Xclang", "+ptx75", "-O0", "-S", "-emit-llvm", "-include", shim},
		options...)
	if out, err := exec.Command(clang, append(args, "-o", ll, src)...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", filepath.Base(src), options, err, out)
	}
	b, err := os.ReadFile(ll)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// irFunc returns the text of function name's definition in the LLVM IR ir
// (from its define line to the closing brace), or "" where it has none.
func irFunc(ir, name string) string {
	for _, part := range strings.SplitAfter(ir, "\n}\n") {
		if i := strings.Index(part, "\ndefine "); i >= 0 && strings.Contains(part[i:strings.Index(part[i+1:], "\n")+i+1], "@"+name+"(") {
			return part[i:]
		}
	}
	return ""
}
