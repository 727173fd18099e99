package hipsrc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// define returns the integer value of `#define NAME value` in src.
func define(t *testing.T, src, name string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^#define ` + name + ` (\d+)\s*$`).FindStringSubmatch(src)
	if m == nil {
		t.Fatalf("no integer #define %s", name)
	}
	v, _ := strconv.Atoi(m[1])
	return v
}

// prelude sections: the wgmma, mma.sync and wide-head-dim mma.sync
// branches of the NVIDIA block configuration and the AMD one.
func preludeSections(t *testing.T) (wgmma, mmaSync, wide, amd string) {
	t.Helper()
	cut := func(s, from, to string) string {
		i := strings.Index(s, from)
		if i < 0 {
			t.Fatalf("prelude: no %q", from)
		}
		s = s[i:]
		j := strings.Index(s[len(from):], to)
		if j < 0 {
			t.Fatalf("prelude: no %q after %q", to, from)
		}
		return s[:len(from)+j]
	}
	wgmma = cut(Prelude, "#if MASKC_NV_WGMMA\n", "#elif MASKC_HEAD_DIM <= 128\n")
	mmaSync = cut(Prelude, "#elif MASKC_HEAD_DIM <= 128\n", "\n#else\n")
	wide = cut(Prelude, "// Head dims above 128: 8 warps", "#endif")
	amd = cut(Prelude, "#define MASKC_NV_V_GROUP", "#endif")
	amd = amd[strings.Index(amd, "#else"):]
	return wgmma, mmaSync, wide, amd
}

func TestConstantsMirrorSources(t *testing.T) {
	if got := define(t, AttnFwd, "MASKC_BLOCK_M"); got != BlockM {
		t.Errorf("MASKC_BLOCK_M = %d, BlockM = %d", got, BlockM)
	}
	if got := define(t, AttnFwd, "MASKC_BLOCK_N"); got != BlockN {
		t.Errorf("MASKC_BLOCK_N = %d, BlockN = %d", got, BlockN)
	}
	wg, nv, wide, amd := preludeSections(t)
	mt := define(t, nv, "MASKC_NV_MTILES")
	tests := []struct {
		p                  Platform
		headDim            int
		warpRows, numWarps int
		qInRegs            bool
		blockN             int
		wantThreads        int
	}{
		{NVIDIA, 128, 16 * mt, 8 / mt, mt == 1, define(t, AttnFwd, "MASKC_BLOCK_N"), 8 / mt * 32},
		{NVIDIA, 256, define(t, wide, "MASKC_WARP_ROWS"), define(t, wide, "MASKC_NUM_WARPS"), define(t, wide, "MASKC_Q_IN_REGS") == 1,
			define(t, AttnFwd, "MASKC_BLOCK_N"), 256},
		{AMD, 128, define(t, amd, "MASKC_WARP_ROWS"), define(t, amd, "MASKC_NUM_WARPS"), define(t, amd, "MASKC_Q_IN_REGS") == 1,
			define(t, AttnFwd, "MASKC_BLOCK_N"), 512},
		{AMD, 256, define(t, amd, "MASKC_WARP_ROWS"), define(t, amd, "MASKC_NUM_WARPS"), define(t, amd, "MASKC_Q_IN_REGS") == 1,
			define(t, AttnFwd, "MASKC_BLOCK_N"), 512},
		{NVIDIAWGMMA, 128, define(t, wg, "MASKC_WARP_ROWS"), define(t, wg, "MASKC_NUM_WARPS"), define(t, wg, "MASKC_Q_IN_REGS") == 1,
			define(t, wg, "MASKC_BLOCK_N"), 256},
		{NVIDIAWGMMA, 256, define(t, wg, "MASKC_WARP_ROWS"), define(t, wg, "MASKC_NUM_WARPS"), define(t, wg, "MASKC_Q_IN_REGS") == 1,
			define(t, wg, "MASKC_BLOCK_N"), 256},
	}
	for _, tt := range tests {
		d := tt.headDim
		if tt.p.WarpRowsAt(d) != tt.warpRows || tt.p.NumWarpsAt(d) != tt.numWarps || tt.p.QInRegisters() != tt.qInRegs ||
			tt.p.BlockN() != tt.blockN {
			t.Errorf("%s D=%d: Go (rows %d, warps %d, q regs %v, block n %d), prelude (%d, %d, %v, %d)", tt.p, d, tt.p.WarpRowsAt(d),
				tt.p.NumWarpsAt(d), tt.p.QInRegisters(), tt.p.BlockN(), tt.warpRows, tt.numWarps, tt.qInRegs, tt.blockN)
		}
		if tt.p.NumThreadsAt(d) != tt.wantThreads || tt.p.WarpRowsAt(d)*tt.p.NumWarpsAt(d) != BlockM {
			t.Errorf("%s D=%d: %d threads, %d rows per block", tt.p, d, tt.p.NumThreadsAt(d), tt.p.WarpRowsAt(d)*tt.p.NumWarpsAt(d))
		}
	}
	if NVIDIA.NumThreads() != NVIDIA.NumThreadsAt(128) || NVIDIA.WarpRows() != 32 {
		t.Error("NumThreads and WarpRows are not the head-dim-128 shape")
	}
	if !strings.Contains(Prelude, "#ifndef MASKC_NV_WGMMA") || WGMMAOptions[0] != "-DMASKC_NV_WGMMA=1" {
		t.Error("WGMMAOptions does not select the prelude's MASKC_NV_WGMMA branch")
	}
	// The head dim is the source's first line (the prelude's block shape
	// depends on it).
	if src := Assemble("// generated\n#define MASKC_HEAD_DIM 256\n"); !strings.HasPrefix(src, "#define MASKC_HEAD_DIM 256\n"+Prelude) {
		t.Errorf("Assemble does not put the head dim first: %.120q", src)
	}
}

func TestForDevice(t *testing.T) {
	for _, tt := range []struct {
		backend, arch string
		want          Platform
	}{
		{"cuda", "sm_90", NVIDIAWGMMA}, {"cuda", "sm_80", NVIDIA}, {"cuda", "sm_89", NVIDIA}, {"cuda", "sm_100", NVIDIA},
		{"hip", "gfx942", AMD}, {"fake", "", NVIDIA},
	} {
		if got := ForDevice(tt.backend, tt.arch); got != tt.want {
			t.Errorf("ForDevice(%q, %q) = %s, want %s", tt.backend, tt.arch, got, tt.want)
		}
	}
}

func TestSharedMemBytes(t *testing.T) {
	tests := []struct {
		p       Platform
		headDim int
		want    int
		wantErr bool
	}{
		{NVIDIA, 128, 2 * (2*2*BlockN*128 + BlockM*128), false},
		{NVIDIA, 64, 2 * (2*2*BlockN*64 + BlockM*64), false},
		{AMD, 128, 2 * (2*BlockN*128 + BlockM*128), false},
		{AMD, 64, 2 * (2*BlockN*64 + BlockM*64), false},
		{NVIDIAWGMMA, 128, 2 * (2*2*WGMMABlockN*128 + BlockM*128), false},
		{NVIDIAWGMMA, 64, 2 * (2*2*WGMMABlockN*64 + BlockM*64), false},
		// Above 128: Q over both stages on AMD (64 KiB of LDS), one block per
		// SM on NVIDIA.
		{AMD, 256, 2 * 128 * 256, false},
		{NVIDIA, 256, 2 * (2*2*BlockN*256 + BlockM*256), false},
		{NVIDIAWGMMA, 256, 2 * (2*2*WGMMABlockN*256 + BlockM*256), false},
		{NVIDIA, 96, 0, true},
		{AMD, 192, 0, true},
	}
	for _, tt := range tests {
		got, err := SharedMemBytes(tt.p, tt.headDim)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("SharedMemBytes(%s, %d) = %d, %v; want %d (error %v)", tt.p, tt.headDim, got, err, tt.want, tt.wantErr)
		}
	}
	// The limits the kernels are built for: AMD LDS is 64 KiB per workgroup;
	// NVIDIA sm_90 gives 227 KiB per block and two blocks share an SM.
	for _, d := range HeadDims {
		if n, _ := SharedMemBytes(AMD, d); n > 64<<10 {
			t.Errorf("AMD head dim %d needs %d bytes of LDS", d, n)
		}
		for _, p := range []Platform{NVIDIA, NVIDIAWGMMA} {
			blocks := 2 // MASKC_MIN_BLOCKS
			if d > 128 {
				blocks = 1
			}
			if n, _ := SharedMemBytes(p, d); blocks*n > 227<<10 {
				t.Errorf("%s head dim %d: %d blocks need %d bytes", p, d, blocks, blocks*n)
			}
		}
	}
}

func TestGrids(t *testing.T) {
	tests := []struct {
		b, h, sq, skv int
		attn, flags   [3]int
		flagBytes     int
	}{
		{2, 16, 8192, 8192, [3]int{64, 16, 2}, [3]int{256, 64, 1}, 2 * 16 * 64 * 256},
		{1, 16, 1, 1, [3]int{1, 16, 1}, [3]int{1, 1, 1}, 16},
		{1, 2, 127, 1000, [3]int{1, 2, 1}, [3]int{32, 1, 1}, 2 * 32},
		{3, 1, 129, 33, [3]int{2, 1, 3}, [3]int{2, 2, 1}, 3 * 2 * 2},
	}
	for _, tt := range tests {
		if got := AttnGrid(tt.b, tt.h, tt.sq); got != tt.attn {
			t.Errorf("AttnGrid(%d, %d, %d) = %v, want %v", tt.b, tt.h, tt.sq, got, tt.attn)
		}
		if got := FlagsGrid(BlockN, tt.sq, tt.skv); got != tt.flags {
			t.Errorf("FlagsGrid(%d, %d) = %v, want %v", tt.sq, tt.skv, got, tt.flags)
		}
		if got := FlagsBytes(BlockN, tt.b, tt.h, tt.sq, tt.skv); got != tt.flagBytes {
			t.Errorf("FlagsBytes = %d, want %d", got, tt.flagBytes)
		}
	}
}

// NVRTC and hiprtc cannot read headers from disk: the only #include is
// hip_runtime.h for hipcc, guarded against hiprtc, inside the AMD branch of
// the prelude.
func TestSourcesNeedNoHeaders(t *testing.T) {
	for name, src := range map[string]string{"attn_fwd.h": AttnFwd, "attn_fwd_sm90.h": AttnFwdSM90, "tile_walk.h": TileWalk, "mma_sync.h": MMASync, "mma_wgmma.h": MMAWGMMA,
		"mma_mfma.h": MMAMFMA, "runtime.h": Runtime, "abi.h": ABIHeader(), "attn_decode.h": AttnDecode} {
		if strings.Contains(src, "#include") {
			t.Errorf("%s includes a header", name)
		}
	}
	lines := strings.Split(Prelude, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(strings.TrimSpace(l), "#include") {
			continue
		}
		if !strings.Contains(l, "<hip/hip_runtime.h>") || i == 0 || !strings.Contains(lines[i-1], "!defined(__HIPCC_RTC__)") {
			t.Errorf("prelude line %d: unguarded include %q", i+1, l)
		}
		if before := strings.Join(lines[:i], "\n"); !strings.Contains(before, "#define MASKC_PLATFORM_AMD 1") ||
			strings.Contains(before, "#define MASKC_PLATFORM_NVIDIA 1") {
			t.Errorf("prelude line %d: include outside the AMD branch", i+1)
		}
	}
}

// TestBackEndsAreGuarded checks that each matrix-core back end compiles in
// only on its platform (the first directive after its include guard), and
// that Assemble puts every source in the documented order.
func TestBackEndsAreGuarded(t *testing.T) {
	for _, tt := range []struct{ name, src, guard string }{
		{"mma_sync.h", MMASync, "#if defined(MASKC_PLATFORM_NVIDIA)"},
		{"mma_wgmma.h", MMAWGMMA, "#if defined(MASKC_PLATFORM_NVIDIA) && MASKC_NV_WGMMA"},
		{"mma_mfma.h", MMAMFMA, "#if defined(MASKC_PLATFORM_AMD)"},
	} {
		var directives []string
		for _, l := range strings.Split(tt.src, "\n") {
			if strings.HasPrefix(l, "#") {
				directives = append(directives, l)
			}
		}
		if len(directives) < 3 || directives[2] != tt.guard {
			t.Errorf("%s: first directives %q, want the include guard then %q", tt.name, directives[:min(3, len(directives))], tt.guard)
		}
	}
	src := Assemble("// GENERATED PART\n")
	last := -1
	for i, part := range []string{Prelude, MMASync, MMAWGMMA, MMAMFMA, ABIHeader(), Runtime, "// GENERATED PART\n", TileWalk, AttnFwd, AttnFwdSM90, AttnDecode} {
		at := strings.Index(src, part)
		if at <= last {
			t.Errorf("part %d of the assembled source is missing or out of order", i)
		}
		last = at
	}
}

// TestABIHeaderFile keeps hipsrc/abi.h (read by people and harnesses) equal
// to the text generated from abi.go: run `go generate ./hipsrc` after
// changing the ABI.
func TestABIHeaderFile(t *testing.T) {
	b, err := os.ReadFile("abi.h")
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != ABIHeader() {
		t.Error("abi.h is stale: run go generate ./hipsrc")
	}
	if !strings.Contains(AttnFwd, "abi.h") || strings.Contains(AttnFwd, "struct MaskcShape {") || strings.Contains(Runtime, "struct MaskcBuffers {") {
		t.Error("the ABI structs must be declared only in abi.h")
	}
}

// TestABILayout compiles abi.h with the host C++ compiler (LP64, the same
// layout as amdgcn and nvptx64) and compares sizeof, alignof and every
// member's offset with the layout abi.go computes, which the manifest
// publishes and the launchers use.
func TestABILayout(t *testing.T) {
	cxx := ""
	for _, c := range []string{"c++", "g++", "clang++"} {
		if p, err := exec.LookPath(c); err == nil {
			cxx = p
			break
		}
	}
	if cxx == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no host C++ compiler")
		}
		t.Skip("no host C++ compiler")
	}
	var prog, want strings.Builder
	prog.WriteString("#include <cstdio>\n#include <cstddef>\n" + ABIHeader() + "int main() {\n")
	for _, s := range Structs {
		fmt.Fprintf(&prog, "  std::printf(\"%s %%zu %%zu\\n\", sizeof(%s), alignof(%s));\n", s.Name, s.Name, s.Name)
		fmt.Fprintf(&want, "%s %d %d\n", s.Name, s.Size, s.Align)
		for _, f := range s.Fields {
			fmt.Fprintf(&prog, "  std::printf(\"%s.%s %%zu %%zu\\n\", offsetof(%s, %s), sizeof(((%s*)0)->%s));\n", s.Name, f.Name, s.Name, f.Name, s.Name, f.Name)
			fmt.Fprintf(&want, "%s.%s %d %d\n", s.Name, f.Name, f.Offset, f.Size)
		}
	}
	prog.WriteString("}\n")
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "layout.cc"), filepath.Join(dir, "layout")
	if err := os.WriteFile(src, []byte(prog.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cxx, "-D__device__=", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cxx, err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out); got != want.String() {
		t.Errorf("C layout:\n%s\nabi.go layout:\n%s", got, want.String())
	}
	// The layout the launchers were first written against (ABI 3 added the
	// six position-frame members at the end of MaskcBuffers, ABI 4 the
	// status pointer after them, ABI 5 widened dim from [8][2] to [8][8]:
	// 632 bytes, as MaxBufferRank's comment says).
	if ShapeStruct.Size != 144 || BuffersStruct.Size != 8*MaxBuffers+8*MaxBuffers*MaxBufferRank+8*len(FrameFields)+8 || BuffersStruct.Size != 632 {
		t.Errorf("MaskcShape %d bytes, MaskcBuffers %d", ShapeStruct.Size, BuffersStruct.Size)
	}
}

// TestBwdSemRows: the turn counters' rows, one definition in the kernel
// (MASKC_BWD_SEM_ROWS) that BwdSemRows mirrors.
func TestBwdSemRows(t *testing.T) {
	if got := define(t, AttnBwd, "MASKC_BWD_SEM_ROWS"); got != BwdSemRows {
		t.Errorf("MASKC_BWD_SEM_ROWS %d, BwdSemRows %d", got, BwdSemRows)
	}
}

// TestManifestRoundTrip writes a manifest and reads it back.
func TestManifestRoundTrip(t *testing.T) {
	m := NewManifest()
	launch, err := Launches(64, false)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := Launches(128, true)
	if err != nil {
		t.Fatal(err)
	}
	if c := ws["nvidia-sm90a"]; c.Threads != WSThreads || c.SharedMemBytes != WSSharedMemBytes(128) || c.BlockN != WGMMABlockN ||
		ws["nvidia"] != launch["nvidia"] && ws["nvidia"].Threads != NVIDIA.NumThreads() {
		t.Errorf("warp-specialized launches %+v", ws)
	}
	m.Kernels = append(m.Kernels, KernelDesc{ID: "k", SourceFile: "k.cu", Sparsity: SparsityPrepass, Launch: launch,
		Slots: []BufferSlot{{Name: "doc", DType: "i32", ElemBytes: BufferElemBytes("i32"), Dims: []string{"KV"}}}})
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	k := got.Kernels[0]
	if k.Sparsity != SparsityPrepass || k.Launch["nvidia-sm90a"].BlockN != WGMMABlockN || k.Slots[0].ElemBytes != 4 || got.Kernel("k") != &got.Kernels[0] || got.Kernel("x") != nil ||
		len(got.ABI.Structs) != len(Structs) || got.ABI.Structs[2].Align != TensorMapAlign || got.ABI.TensorMaps.BoxCols != TensorMapBoxCols || got.ABI.Structs[0].Fields[5].Offset != 24 || got.ABI.Entries[1].Grid[0].Tile != "block_n" {
		t.Errorf("round trip: %+v", got)
	}
	if got.Version != ManifestVersion || got.ABI.Version != ABIVersion {
		t.Errorf("versions: manifest %d, abi %d", got.Version, got.ABI.Version)
	}
	// Older manifests are refused by their version, before their fields are
	// read: version 4's kernels[].buffers had the same key, and a kernel
	// entry whose fields no longer fit must not fail as a type error.
	for _, old := range []string{`{"version": 1}`, `{"version": 4, "kernels": [{"name": 3}]}`} {
		if err := os.WriteFile(filepath.Join(dir, ManifestFile), []byte(old), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadManifest(dir); err == nil || !strings.Contains(err.Error(), "manifest version") || !strings.Contains(err.Error(), "rewrite it") {
			t.Errorf("an old manifest %s: %v", old, err)
		}
	}
	// A manifest of this schema whose kernels were built for an older ABI
	// (4: MaskcBuffers.dim of 2 extents) is refused naming both versions.
	old := fmt.Sprintf(`{"version": %d, "abi": {"version": %d}}`, ManifestVersion, ABIVersion-1)
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadManifest(dir); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("kernel ABI %d, this maskc fills ABI %d", ABIVersion-1, ABIVersion)) {
		t.Errorf("a manifest of ABI 4: %v", err)
	}
}

func TestBwdConstantsMirrorSource(t *testing.T) {
	if got := define(t, AttnBwd, "MASKC_BWD_WARPS"); got != BwdWarps {
		t.Errorf("MASKC_BWD_WARPS = %d, Go has %d", got, BwdWarps)
	}
	if !strings.Contains(AttnBwd, "#define MASKC_BWD_PRE_ROWS (MASKC_BWD_THREADS / 16)") || BwdPreLanes != 16 {
		t.Error("MASKC_BWD_PRE_ROWS no longer gives 16 lanes per row (BwdPreLanes)")
	}
	if !strings.Contains(AttnBwd, "#define MASKC_BWD_FIX_ONE 4294967296.0f") || BwdFixOne != 4294967296 {
		t.Error("MASKC_BWD_FIX_ONE and BwdFixOne differ")
	}
	// MASKC_BWD_SMEM_FOR's formula, which smemFor mirrors, and its two uses.
	for _, want := range []string{
		"(2 * ((2 - MASKC_BWD_AREGS) * (BN) * MASKC_HEAD_DIM + 2 * MASKC_BWD_BLOCK_M * MASKC_HEAD_DIM + \\\n        2 * (BN) * MASKC_BWD_BLOCK_M) +",
		"#define MASKC_BWD_SMEM_BYTES \\\n  (MASKC_BWD_SMEM_FOR(MASKC_BWD_BLOCK_N) + 2 * MASKC_BWD_SPLIT_D * MASKC_BWD_BLOCK_N * MASKC_BWD_BLOCK_M)\n",
		"#define MASKC_BWD_DQ_SMEM_BYTES MASKC_BWD_SMEM_FOR(MASKC_BWD_DQ_N)\n",
		"#define MASKC_BWD_DQ_N (MASKC_BWD_BLOCK_N / MASKC_BWD_GROUPS)\n",
		"#define MASKC_BWD_MAIN_THREADS (MASKC_BWD_GROUPS * MASKC_BWD_THREADS)",
	} {
		if !strings.Contains(AttnBwd, want) {
			t.Errorf("attn_bwd.h no longer has %q: update BwdTile.SharedMemBytes, DQSharedMemBytes or BwdLaunchConfig", want)
		}
	}
	if AMD.BwdThreads() != 256 || NVIDIA.BwdThreads() != 128 || NVIDIAWGMMA.BwdThreads() != 128 {
		t.Errorf("BwdThreads: amd %d, nvidia %d", AMD.BwdThreads(), NVIDIA.BwdThreads())
	}
}

// TestBwdTiles: the backward's tiles per platform and head dim, the shared
// memory they take against each platform's limit, and the C text that
// configures attn_bwd.h with them.
func TestBwdTiles(t *testing.T) {
	for _, tc := range []struct {
		p                      Platform
		headDim                int
		ws                     bool
		blockM, blockN, groups int
		aregs                  bool
		smem, dqSmem           int // maskc_attn_bwd's, maskc_attn_bwd_dq's
		limitBytes             int
	}{
		// The warp-specialized tile: two consumer warpgroups on 128 keys, K,
		// V, two Q and dO stages, two dS^T buffers; the dQ kernel one
		// warpgroup on 64-key steps. The main kernel's static 32 KiB of dQ
		// rows (and a few hundred bytes of rows and barriers) come on top (one
		// block per SM).
		{NVIDIAWGMMA, 128, true, 64, 128, 2, false, 2 * (2*128*128 + 4*64*128 + 2*128*64), 2*(2*64*128+2*64*128+2*64*64) + 8*64, 227<<10 - 33<<10},
		// Head dim 64 has no warp-specialized tile (0.88-0.99x as fast, run 38).
		{NVIDIAWGMMA, 64, true, 64, 64, 1, false, 2*(2*64*64+2*64*64+2*64*64) + 8*64, 2*(2*64*64+2*64*64+2*64*64) + 8*64, 227 << 10},
		{NVIDIAWGMMA, 64, false, 64, 64, 1, false, 2*(2*64*64+2*64*64+2*64*64) + 8*64, 2*(2*64*64+2*64*64+2*64*64) + 8*64, 227 << 10},
		{NVIDIAWGMMA, 128, false, 64, 64, 1, false, 82432, 82432, 227 << 10},
		// Platforms without a warp-specialized tile take the plain one.
		{NVIDIA, 128, true, 64, 64, 1, false, 82432, 82432, 99 << 10},
		// The MFMA backward at head dim 128 in gfx90a's and gfx942's 64 KiB.
		{AMD, 64, true, 64, 64, 1, false, 49664, 49664, 64 << 10},
		{AMD, 128, false, 32, 64, 1, false, 57600, 57600, 64 << 10},
		// Head dim 256: V (and in the dQ kernel Q, dO) in registers on AMD.
		{AMD, 256, false, 32, 32, 1, true, 2*(32*256+2*32*256+2*32*32) + 8*32, 2*(32*256+2*32*256+2*32*32) + 8*32, 64 << 10},
		{NVIDIA, 256, false, 32, 32, 1, false, 69888, 69888, 99 << 10},
		// Head dim 256 on sm_90a: two warpgroups split dK's and dV's columns
		// of a 64 x 64 tile, P^T shared in a second 8 KiB tile; the main
		// kernel's static 64 KiB of dQ rows come on top. The dQ kernel is
		// one warpgroup on 32-key steps (BlockN / Groups).
		{NVIDIAWGMMA, 256, true, 64, 64, 2, false, 2*(2*64*256+2*64*256+2*64*64) + 8*64 + 2*64*64,
			2*(2*32*256+2*64*256+2*32*64) + 8*64, 227<<10 - 64<<10},
	} {
		tile, err := tc.p.BwdTileOf(tc.headDim, BwdChoice{WarpSpecialized: tc.ws})
		if err != nil {
			t.Fatal(err)
		}
		if tile.BlockM != tc.blockM || tile.BlockN != tc.blockN || tile.ARegs != tc.aregs || tile.Groups != tc.groups ||
			tile.SplitD != (tc.p == NVIDIAWGMMA && tc.headDim == 256) {
			t.Errorf("%s D=%d: tile %+v", tc.p, tc.headDim, tile)
		}
		if got := tile.SharedMemBytes(tc.headDim); got != tc.smem || got > tc.limitBytes {
			t.Errorf("%s D=%d: %d bytes of shared memory, want %d (at most %d)", tc.p, tc.headDim, got, tc.smem, tc.limitBytes)
		}
		if got := tile.DQSharedMemBytes(tc.headDim); got != tc.dqSmem {
			t.Errorf("%s D=%d: the dQ kernel's %d bytes of shared memory, want %d", tc.p, tc.headDim, got, tc.dqSmem)
		}
		c, err := BwdLaunchOn(tc.p, tc.headDim, BwdChoice{WarpSpecialized: tc.ws})
		if err != nil || c.BlockM != tc.blockM || c.BlockN != tc.blockN || c.Threads != tc.p.BwdThreads() ||
			c.MainThreads != (tc.groups+b2i(tc.ws && tc.p == NVIDIAWGMMA && tc.headDim == 128))*tc.p.BwdThreads() || c.SharedMemBytes != tc.smem || c.DQSharedMemBytes != tc.dqSmem {
			t.Errorf("BwdLaunchOn(%s, %d) = %+v, %v", tc.p, tc.headDim, c, err)
		}
		for _, e := range []struct {
			name          string
			threads, smem int
		}{{BwdMainEntry, c.MainThreads, c.SharedMemBytes}, {BwdDQEntry, c.Threads, c.DQSharedMemBytes},
			{BwdPreEntry, c.Threads, 0}, {BwdDQConvertEntry, c.Threads, 0}} {
			if th, sm := c.Entry(e.name); th != e.threads || sm != e.smem {
				t.Errorf("%s D=%d: %s launches %d threads, %d bytes; want %d, %d", tc.p, tc.headDim, e.name, th, sm, e.threads, e.smem)
			}
		}
	}
	for _, d := range HeadDims {
		for _, p := range Platforms {
			tile, err := p.BwdTileFor(d)
			if err != nil {
				t.Fatalf("%s has no backward tile at head dim %d", p, d)
			}
			if p == AMD && tile.SharedMemBytes(d) > 64<<10 {
				t.Errorf("AMD D=%d: the backward needs %d bytes of LDS", d, tile.SharedMemBytes(d))
			}
		}
		// The C text gives each platform's branch its tile.
		for _, choice := range []BwdChoice{{}, {WarpSpecialized: true}} {
			text, err := BwdTileDefines(d, choice)
			if err != nil {
				t.Fatal(err)
			}
			branches := strings.Split(text, "\n#")
			for _, p := range Platforms {
				tile, _ := p.BwdTileOf(d, choice)
				want := fmt.Sprintf("  // %s\n#define MASKC_BWD_BLOCK_M %d\n#define MASKC_BWD_BLOCK_N %d\n#define MASKC_BWD_AREGS %d\n#define MASKC_BWD_GROUPS %d\n#define MASKC_BWD_SPLIT_D %d\n",
					p, tile.BlockM, tile.BlockN, b2i(tile.ARegs), tile.Groups, b2i(tile.SplitD))
				if !strings.Contains(text, want) {
					t.Errorf("BwdTileDefines(%d, %+v) lacks %q:\n%s", d, choice, want, text)
				}
			}
			if len(branches) < 4 || !strings.HasPrefix(text, "// ") || !strings.Contains(text, "#if defined(MASKC_PLATFORM_AMD)  // amd\n") ||
				!strings.Contains(text, "#elif MASKC_NV_WGMMA  // nvidia-sm90a\n") || !strings.HasSuffix(text, "#endif\n") {
				t.Errorf("BwdTileDefines(%d, %+v):\n%s", d, choice, text)
			}
		}
	}
	if got := HeadDimList(); got != "64, 128 or 256" {
		t.Errorf("HeadDimList() = %q", got)
	}
	if _, err := NVIDIA.BwdTileFor(96); err == nil {
		t.Error("head dim 96 has a backward tile")
	}
	if _, err := BwdTileDefines(96, BwdChoice{WarpSpecialized: true}); err == nil {
		t.Error("BwdTileDefines(96) gave no error")
	}
}

// cStructFields parses the declaration of struct name in src: its members
// with their C types and array extents ("int B, H;" and continuation lines
// without a type, as attn_bwd.h writes them).
func cStructFields(t *testing.T, src, name string) []Field {
	t.Helper()
	i := strings.Index(src, "struct "+name+" {")
	if i < 0 {
		t.Fatalf("no struct %s", name)
	}
	body := src[i:]
	body = body[:strings.Index(body, "\n};")]
	var out []Field
	ctype := ""
	for _, line := range strings.Split(body, "\n")[1:] {
		decl := strings.TrimSpace(line)
		if i := strings.Index(decl, "//"); i >= 0 {
			decl = strings.TrimSpace(decl[:i])
		}
		if decl == "" {
			continue
		}
		// "int B, H, HKV, Sq, Skv;", "long long q_stride[3], ...," (a
		// continuation line has no type), "const float* sink;": the type is
		// what precedes the first name, up to its last space or '*'.
		decl = strings.TrimSuffix(decl, ";")
		first := strings.Split(decl, ",")[0]
		if i := strings.LastIndexAny(first, " *"); i >= 0 {
			ctype = strings.TrimSpace(first[:i+1])
			decl = first[i+1:] + decl[len(first):]
		}
		for _, f := range strings.Split(decl, ",") {
			f = strings.TrimSpace(f)
			if f == "" {
				continue
			}
			fd := Field{CType: ctype}
			if i := strings.Index(f, "["); i >= 0 {
				for _, d := range strings.Split(strings.TrimSuffix(f[i+1:], "]"), "][") {
					n, err := strconv.Atoi(d)
					if err != nil {
						t.Fatalf("struct %s: extent %q", name, d)
					}
					fd.Dims = append(fd.Dims, n)
				}
				f = f[:i]
			}
			fd.Name = f
			out = append(out, fd)
		}
	}
	return out
}

// TestBwdShapeMatchesHeader: BwdShapeStruct, which the Go runtime mirrors
// and the manifest describes, is the struct attn_bwd.h declares, member by
// member (name, C type, extents), and its layout is the LP64 one.
func TestBwdShapeMatchesHeader(t *testing.T) {
	c := cStructFields(t, AttnBwd, "MaskcBwdShape")
	if len(c) != len(BwdShapeStruct.Fields) {
		t.Fatalf("attn_bwd.h declares %d members, BwdShapeStruct has %d", len(c), len(BwdShapeStruct.Fields))
	}
	for i, f := range BwdShapeStruct.Fields {
		if c[i].Name != f.Name || c[i].CType != f.CType || fmt.Sprint(c[i].Dims) != fmt.Sprint(f.Dims) {
			t.Errorf("member %d: header %s %s%v, BwdShapeStruct %s %s%v", i, c[i].CType, c[i].Name, c[i].Dims, f.CType, f.Name, f.Dims)
		}
	}
	if f, _ := BwdShapeStruct.Field("dbuf"); f.Offset != 288 || BwdShapeStruct.Size != 352 {
		t.Errorf("dbuf at %d, size %d; want 288 and 352 (5 ints + pad, 8 stride triples, float + pad, 8 pointers, 8 pointers)", f.Offset, BwdShapeStruct.Size)
	}
}

// TestBwdGrids: the backward grid rules give what attn_bwd.h's comment
// says on each platform.
func TestBwdGrids(t *testing.T) {
	sz := LaunchSizes{B: 2, H: 16, HKV: 2, Sq: 1000, Skv: 129, N: 513}
	for _, tc := range []struct {
		p    Platform
		name string
		want [3]int
	}{
		{NVIDIA, BwdPreEntry, [3]int{125, 16, 2}}, // 8 rows per 128-thread block
		{AMD, BwdPreEntry, [3]int{63, 16, 2}},     // 16 rows per 256-thread block
		{NVIDIAWGMMA, BwdMainEntry, [3]int{3, 2, 2}},
		{AMD, BwdDQEntry, [3]int{16, 16, 2}},
		{NVIDIA, BwdDQConvertEntry, [3]int{125, 16, 2}},
		{AMD, BwdSinkEntry, [3]int{16, 1, 1}},
		{NVIDIA, BwdBufConvertEntry, [3]int{5, 1, 1}},
		{AMD, BwdBufConvertEntry, [3]int{3, 1, 1}},
	} {
		e, ok := BwdEntry(tc.name)
		if !ok {
			t.Fatalf("no entry %s", tc.name)
		}
		if got, err := e.EvalOn(sz, tc.p, 64); err != nil || got != tc.want {
			t.Errorf("%s on %s: grid %v, want %v", tc.name, tc.p, got, tc.want)
		}
	}
	// The MFMA backward's 32-row q tile at head dim 128.
	dq, _ := BwdEntry(BwdDQEntry)
	if got, err := dq.EvalOn(sz, AMD, 128); err != nil || got != [3]int{32, 16, 2} {
		t.Errorf("%s on amd at D=128: grid %v, %v", BwdDQEntry, got, err)
	}
	if _, err := dq.EvalOn(sz, AMD, 96); err == nil {
		t.Errorf("%s at D=96: no error", BwdDQEntry)
	}
	if got := BwdEntryNames(); strings.Join(got, " ") != "maskc_attn_bwd_pre maskc_attn_bwd maskc_attn_bwd_dq maskc_attn_bwd_dq_convert maskc_attn_bwd_sink maskc_attn_bwd_buf_convert" {
		t.Errorf("BwdEntryNames() = %v", got)
	}
	for _, e := range BwdEntries {
		if !strings.Contains(AttnBwd, e.Name+"(") {
			t.Errorf("attn_bwd.h defines no %s", e.Name)
		}
	}
}

// TestManifestDocumentsEveryField: every JSON field of manifest.json (the
// types it is written from) is named in MANIFEST.md, which the Python
// package and other launchers read as the schema.
func TestManifestDocumentsEveryField(t *testing.T) {
	doc, err := os.ReadFile("MANIFEST.md")
	if err != nil {
		t.Fatal(err)
	}
	// The names in code spans: `bwd_source`, `{name, slot, dtype}`, ...
	named := map[string]bool{}
	for _, span := range regexp.MustCompile("`[^`]+`").FindAllString(string(doc), -1) {
		for _, w := range regexp.MustCompile(`\w+`).FindAllString(span, -1) {
			named[w] = true
		}
	}
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(ty reflect.Type) {
		for ty.Kind() == reflect.Slice || ty.Kind() == reflect.Map || ty.Kind() == reflect.Array || ty.Kind() == reflect.Pointer {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct || seen[ty] {
			return
		}
		seen[ty] = true
		for i := 0; i < ty.NumField(); i++ {
			f := ty.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			if !named[name] {
				t.Errorf("MANIFEST.md does not document %s.%s (`%s`)", ty.Name(), f.Name, name)
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeOf(Manifest{}))
	if len(seen) < 8 {
		t.Errorf("walked only %d types", len(seen))
	}
}

// TestWSConstantsMirrorSource keeps the warp-specialized forward's launch
// constants equal to attn_fwd_sm90.h's #defines and the shared-memory
// formula equal to the source's, per head dim.
func TestWSConstantsMirrorSource(t *testing.T) {
	if got := define(t, AttnFwdSM90, "MASKC_WS_THREADS"); got != WSThreads {
		t.Errorf("MASKC_WS_THREADS %d, WSThreads %d", got, WSThreads)
	}
	if got := define(t, AttnFwdSM90, "MASKC_WS_STAGES"); got != WSStages {
		t.Errorf("MASKC_WS_STAGES %d, WSStages %d", got, WSStages)
	}
	if got := define(t, AttnFwdSM90, "MASKC_WS_WALK_BYTES"); got != WSWalkBytes {
		t.Errorf("MASKC_WS_WALK_BYTES %d, WSWalkBytes %d", got, WSWalkBytes)
	}
	for _, tt := range []struct{ d, bn, smem int }{
		{64, 128, 2*(128*64+2*2*128*64) + 72},
		{128, 128, 2*(128*128+2*2*128*128) + 72},
		{256, 64, 2*(128*256+2*2*64*256) + 72},
	} {
		if got := WSBlockN(tt.d); got != tt.bn {
			t.Errorf("WSBlockN(%d) = %d, want %d", tt.d, got, tt.bn)
		}
		if got := WSSharedMemBytes(tt.d); got != tt.smem {
			t.Errorf("WSSharedMemBytes(%d) = %d, want %d", tt.d, got, tt.smem)
		}
		if tt.smem > 227*1024 {
			t.Errorf("head dim %d: %d bytes of shared memory exceed the sm_90 limit", tt.d, tt.smem)
		}
	}
	for _, want := range []string{"#define MASKC_WS_BLOCK_N 64", "#define MASKC_WS_BLOCK_N 128",
		"#define MASKC_WS_SMEM_BYTES (MASKC_WS_BAR_OFFSET + 8 * (4 * MASKC_WS_STAGES + 1))"} {
		if !strings.Contains(AttnFwdSM90, want) {
			t.Errorf("attn_fwd_sm90.h lacks %q", want)
		}
	}
}

// TestStatusWordsExported checks that the status words' constants reach
// abi.h and the manifest from their one definition, and that MaskcBuffers
// ends with the pointer to them.
func TestStatusWordsExported(t *testing.T) {
	h := ABIHeader()
	for _, want := range []string{
		"#define MASKC_STATUS_WORDS (1 + MASKC_MAX_BUFFERS)",
		fmt.Sprintf("#define MASKC_STATUS_SEGMENTS_UNSORTED %du", StatusSegmentsUnsorted),
		fmt.Sprintf("#define MASKC_STATUS_READ_OUT_OF_RANGE %du", StatusReadOutOfRange),
		"unsigned int* status;",
	} {
		if !strings.Contains(h, want) {
			t.Errorf("abi.h lacks %q", want)
		}
	}
	last := BuffersStruct.Fields[len(BuffersStruct.Fields)-1]
	if last.Name != "status" || last.CType != "unsigned int*" || last.Offset != BuffersStruct.Size-8 {
		t.Errorf("MaskcBuffers ends with %+v; want the status pointer", last)
	}
	d := Describe().Status
	if d.Words != StatusWords || StatusWords != 1+MaxBuffers || len(d.Bits) != 2 {
		t.Errorf("manifest status %+v", d)
	}
	seen := uint32(0)
	for _, b := range d.Bits {
		if b.Value == 0 || b.Value&(b.Value-1) != 0 || seen&b.Value != 0 {
			t.Errorf("status bit %s = %d: want distinct single bits", b.Name, b.Value)
		}
		seen |= b.Value
	}
}

// TestEntryParamsFit: every entry point's parameters, MaskcBuffers of
// MaxBufferRank extents per slot included, fit in the 4 KiB that CUDA and
// HIP pass to a kernel by value (each scalar counted as 8 bytes, an upper
// bound of its aligned size).
func TestEntryParamsFit(t *testing.T) {
	sizes := map[string]int{}
	for _, s := range append(append([]Struct(nil), Structs...), BwdShapeStruct) {
		sizes[s.Name] = s.Size
	}
	for _, e := range append(append([]Entry(nil), Entries...), BwdEntries...) {
		n := 0
		for _, p := range e.Params {
			if sz, ok := sizes[p.CType]; ok {
				n += sz
			} else {
				n += 8
			}
		}
		if n > 4096 || n < BuffersStruct.Size && slices.ContainsFunc(e.Params, func(p Param) bool { return p.CType == "MaskcBuffers" }) {
			t.Errorf("%s: %d bytes of parameters", e.Name, n)
		}
	}
}

// TestBwdWarpSpecializedTile checks the warp-specialized backward's tile
// (BwdChoice.WarpSpecialized): on sm_90a at head dim 128 two consumer groups on 128 keys with a producer warpgroup (384
// threads in maskc_attn_bwd, 128 in the other kernels), K, V, two Q and dO
// stages and two dS^T buffers of dynamic shared memory, and MASKC_BWD_WS in
// the sm_90a branch of the C text only; every other platform and head dim
// keeps the tile it has without it.
func TestBwdWarpSpecializedTile(t *testing.T) {
	ws := BwdChoice{WarpSpecialized: true}
	for _, d := range HeadDims {
		for _, p := range Platforms {
			tile, err := p.BwdTileOf(d, ws)
			if err != nil {
				t.Fatal(err)
			}
			c, err := BwdLaunchOn(p, d, ws)
			if err != nil {
				t.Fatal(err)
			}
			if p != NVIDIAWGMMA || d != 128 {
				plain, _ := p.BwdTileFor(d)
				if tile != plain {
					t.Errorf("%s D=%d: tile %+v, want the plain %+v", p, d, tile, plain)
				}
				continue
			}
			smem := 2 * (2*128*d + 4*64*d + 2*128*64)
			if tile != (BwdTile{BlockM: 64, BlockN: 128, Groups: 2, Producer: true}) || c.MainThreads != 384 ||
				c.Threads != 128 || c.SharedMemBytes != smem || c.DQSharedMemBytes != tile.DQSharedMemBytes(d) ||
				smem+4*16*d*4 > 227<<10 {
				t.Errorf("%s D=%d: tile %+v, launch %+v (want %d bytes)", p, d, tile, c, smem)
			}
		}
		text, err := BwdTileDefines(d, ws)
		if err != nil {
			t.Fatal(err)
		}
		wgmma := text[strings.Index(text, "#elif MASKC_NV_WGMMA"):strings.Index(text, "#else")]
		got, want := strings.Contains(wgmma, "#define MASKC_BWD_WS 1"), d == 128
		if got != want || strings.Count(text, "MASKC_BWD_WS") != b2i(want) {
			t.Errorf("BwdTileDefines(%d, %+v): MASKC_BWD_WS in the sm_90a branch %v, want %v (and nowhere else):\n%s", d, ws, got, want, text)
		}
	}
}
