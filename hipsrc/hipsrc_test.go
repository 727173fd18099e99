package hipsrc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// prelude sections: the wgmma and mma.sync branches of the NVIDIA block
// configuration and the AMD one.
func preludeSections(t *testing.T) (wgmma, mmaSync, amd string) {
	t.Helper()
	nv := Prelude[strings.Index(Prelude, "#if MASKC_NV_WGMMA\n"):]
	wgmma = nv[:strings.Index(nv, "#else\n")]
	mmaSync = nv[len(wgmma):]
	mmaSync = mmaSync[:strings.Index(mmaSync, "#endif")]
	amd = nv[strings.Index(nv, "#define MASKC_NV_V_GROUP"):]
	amd = amd[strings.Index(amd, "#else"):]
	amd = amd[:strings.Index(amd, "#endif")]
	return wgmma, mmaSync, amd
}

func TestConstantsMirrorSources(t *testing.T) {
	if got := define(t, AttnFwd, "MASKC_BLOCK_M"); got != BlockM {
		t.Errorf("MASKC_BLOCK_M = %d, BlockM = %d", got, BlockM)
	}
	if got := define(t, AttnFwd, "MASKC_BLOCK_N"); got != BlockN {
		t.Errorf("MASKC_BLOCK_N = %d, BlockN = %d", got, BlockN)
	}
	wg, nv, amd := preludeSections(t)
	mt := define(t, nv, "MASKC_NV_MTILES")
	tests := []struct {
		p                  Platform
		warpRows, numWarps int
		qInRegs            bool
		blockN             int
		wantThreads        int
	}{
		{NVIDIA, 16 * mt, 8 / mt, mt == 1, define(t, AttnFwd, "MASKC_BLOCK_N"), 8 / mt * 32},
		{AMD, define(t, amd, "MASKC_WARP_ROWS"), define(t, amd, "MASKC_NUM_WARPS"), define(t, amd, "MASKC_Q_IN_REGS") == 1,
			define(t, AttnFwd, "MASKC_BLOCK_N"), 512},
		{NVIDIAWGMMA, define(t, wg, "MASKC_WARP_ROWS"), define(t, wg, "MASKC_NUM_WARPS"), define(t, wg, "MASKC_Q_IN_REGS") == 1,
			define(t, wg, "MASKC_BLOCK_N"), 256},
	}
	for _, tt := range tests {
		if tt.p.WarpRows() != tt.warpRows || tt.p.NumWarps() != tt.numWarps || tt.p.QInRegisters() != tt.qInRegs ||
			tt.p.BlockN() != tt.blockN {
			t.Errorf("%s: Go (rows %d, warps %d, q regs %v, block n %d), prelude (%d, %d, %v, %d)", tt.p, tt.p.WarpRows(),
				tt.p.NumWarps(), tt.p.QInRegisters(), tt.p.BlockN(), tt.warpRows, tt.numWarps, tt.qInRegs, tt.blockN)
		}
		if tt.p.NumThreads() != tt.wantThreads || tt.p.WarpRows()*tt.p.NumWarps() != BlockM {
			t.Errorf("%s: %d threads, %d rows per block", tt.p, tt.p.NumThreads(), tt.p.WarpRows()*tt.p.NumWarps())
		}
	}
	if !strings.Contains(Prelude, "#ifndef MASKC_NV_WGMMA") || WGMMAOptions[0] != "-DMASKC_NV_WGMMA=1" {
		t.Error("WGMMAOptions does not select the prelude's MASKC_NV_WGMMA branch")
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
		{NVIDIA, 96, 0, true},
		{AMD, 256, 0, true},
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
			if n, _ := SharedMemBytes(p, d); 2*n > 227<<10 {
				t.Errorf("%s head dim %d: two blocks need %d bytes", p, d, 2*n)
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
// hip_runtime.h for hipcc, guarded against hiprtc, inside the AMD branch.
func TestSourcesNeedNoHeaders(t *testing.T) {
	if strings.Contains(AttnFwd, "#include") {
		t.Error("attn_fwd.h includes a header")
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

// assemble builds a full kernel source from one of the hand-written
// generated parts the GPU harness also runs (gpu/cases), so the template is
// compiled here with exactly what was measured on the H200.
func assemble(t *testing.T, part string, headDim int, dtype string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "gpu", "cases", part+".h"))
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s\n#define MASKC_HEAD_DIM %d\n#define MASKC_DTYPE_%s 1\n%s\n%s", Prelude, headDim, dtype, b, AttnFwd)
}

// TestHIPCompilesWithMFMA compiles generated kernels for gfx90a and gfx940
// with hipcc and checks the disassembly uses the matrix cores. Without
// hipcc the test is skipped, except in CI (CI=true), where it fails.
func TestHIPCompilesWithMFMA(t *testing.T) {
	hipcc, err := exec.LookPath("hipcc")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("hipcc not found; CI must install it (apt-get install hipcc)")
		}
		t.Skip("hipcc not found")
	}
	objdump := ""
	// Newest first: an objdump older than the compiler may not know the target.
	for _, c := range []string{"llvm-objdump-19", "llvm-objdump-18", "llvm-objdump-17", "llvm-objdump-16", "llvm-objdump-15", "llvm-objdump"} {
		if p, err := exec.LookPath(c); err == nil {
			objdump = p
			break
		}
	}
	if objdump == "" {
		t.Fatal("hipcc is installed but no llvm-objdump")
	}
	tests := []struct {
		part    string
		headDim int
		dtype   string
		arch    string
	}{
		{"causal", 128, "BF16", "gfx90a"},
		{"document", 128, "BF16", "gfx940"},
		{"full_sink", 64, "F16", "gfx90a"},
		{"causal_alibi", 64, "BF16", "gfx940"},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		name := fmt.Sprintf("%s_d%d_%s_%s", tt.part, tt.headDim, tt.dtype, tt.arch)
		t.Run(name, func(t *testing.T) {
			src := filepath.Join(dir, name+".hip")
			obj := filepath.Join(dir, name+".co")
			if err := os.WriteFile(src, []byte(assemble(t, tt.part, tt.headDim, tt.dtype)), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(hipcc, "-std=c++17", "-O3", "--offload-arch="+tt.arch, "--cuda-device-only",
				"--no-gpu-bundle-output", "-c", src, "-o", obj).CombinedOutput()
			if err != nil {
				t.Fatalf("hipcc: %v\n%s", err, out)
			}
			dis, err := exec.Command(objdump, "-d", obj).CombinedOutput()
			if err != nil {
				t.Fatalf("llvm-objdump: %v\n%s", err, dis)
			}
			text := string(dis)
			for _, sym := range []string{"<maskc_attn_fwd>:", "<maskc_tile_flags>:"} {
				if !strings.Contains(text, sym) {
					t.Errorf("no %s in the code object", sym)
				}
			}
			// gfx90a spells it v_mfma_f32_16x16x16bf16_1k, gfx940 v_mfma_f32_16x16x16_bf16.
			mfma := regexp.MustCompile(`v_mfma_f32_16x16x16_?` + strings.ToLower(tt.dtype) + `(_1k)?\b`)
			if len(mfma.FindAllString(text, -1)) == 0 {
				t.Errorf("no %s in the disassembly", mfma)
			}
		})
	}
}

// TestShapeLayout pins the host-visible layout of struct MaskcShape, which
// launchers (gpu/maskc_gpu.py, the Go runtime) mirror byte for byte: it
// compiles the struct as it appears in AttnFwd with the host C++ compiler
// and prints its size and field offsets.
func TestShapeLayout(t *testing.T) {
	cxx := ""
	for _, c := range []string{"c++", "g++", "clang++"} {
		if p, err := exec.LookPath(c); err == nil {
			cxx = p
			break
		}
	}
	if cxx == "" {
		t.Skip("no host C++ compiler")
	}
	m := regexp.MustCompile(`(?s)struct MaskcShape \{.*?\n\};`).FindString(AttnFwd)
	if m == "" {
		t.Fatal("struct MaskcShape not found in attn_fwd.h")
	}
	prog := "#include <cstdio>\n#include <cstddef>\n" + m + `
int main() {
  std::printf("%zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu", sizeof(MaskcShape), offsetof(MaskcShape, B),
              offsetof(MaskcShape, Skv), offsetof(MaskcShape, q_stride), offsetof(MaskcShape, k_stride),
              offsetof(MaskcShape, v_stride), offsetof(MaskcShape, o_stride), offsetof(MaskcShape, scale),
              offsetof(MaskcShape, sink), offsetof(MaskcShape, tile_flags), offsetof(MaskcShape, H),
              offsetof(MaskcShape, Sq));
}
`
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "layout.cc"), filepath.Join(dir, "layout")
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cxx, "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cxx, err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	// size, B, Skv, q_stride, k_stride, v_stride, o_stride, scale, sink, tile_flags, H, Sq
	const want = "144 0 16 24 48 72 96 120 128 136 4 12"
	if got := string(out); got != want {
		t.Errorf("MaskcShape layout = %q, want %q", got, want)
	}
}

func TestBwdConstantsMirrorSource(t *testing.T) {
	for _, tt := range []struct {
		name string
		want int
	}{
		{"MASKC_BWD_BLOCK_M", BwdBlockM},
		{"MASKC_BWD_BLOCK_N", BwdBlockN},
		{"MASKC_BWD_WARPS", BwdWarps},
	} {
		if got := define(t, AttnBwd, tt.name); got != tt.want {
			t.Errorf("%s = %d, Go has %d", tt.name, got, tt.want)
		}
	}
	if !strings.Contains(AttnBwd, "#define MASKC_BWD_PRE_ROWS (MASKC_BWD_THREADS / 16)") || BwdPreLanes != 16 {
		t.Error("MASKC_BWD_PRE_ROWS no longer gives 16 lanes per row (BwdPreLanes)")
	}
	if !strings.Contains(AttnBwd, "#define MASKC_BWD_FIX_ONE 4294967296.0f") || BwdFixOne != 4294967296 {
		t.Error("MASKC_BWD_FIX_ONE and BwdFixOne differ")
	}
	// MASKC_BWD_SMEM_BYTES for D = 128: 2 * (2*64*128 + 2*64*128 + 2*64*64) + 8*64.
	if got, want := BwdSharedMemBytes(128), 2*(2*64*128+2*64*128+2*64*64)+8*64; got != want {
		t.Errorf("BwdSharedMemBytes(128) = %d, want %d", got, want)
	}
	if AMD.BwdThreads() != 256 || NVIDIA.BwdThreads() != 128 || NVIDIAWGMMA.BwdThreads() != 128 {
		t.Errorf("BwdThreads: amd %d, nvidia %d", AMD.BwdThreads(), NVIDIA.BwdThreads())
	}
}

// TestBwdShapeMirroredInPython: gpu/maskc_gpu.py packs struct MaskcBwdShape
// field by field; its ctypes mirror must list the C struct's fields in order.
func TestBwdShapeMirroredInPython(t *testing.T) {
	body := AttnBwd[strings.Index(AttnBwd, "struct MaskcBwdShape {"):]
	body = body[:strings.Index(body, "\n};")]
	var cFields []string
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
			decl = first[i+1:] + decl[len(first):]
		}
		for _, f := range strings.Split(decl, ",") {
			f = strings.TrimSpace(f)
			if f == "" {
				continue
			}
			if i := strings.Index(f, "["); i >= 0 {
				f = f[:i]
			}
			cFields = append(cFields, f)
		}
	}
	py, err := os.ReadFile("../gpu/maskc_gpu.py")
	if err != nil {
		t.Fatal(err)
	}
	src := string(py)
	cls := src[strings.Index(src, "class MaskcBwdShape"):]
	cls = cls[:strings.Index(cls, "\n\n")]
	var pyFields []string
	for _, m := range regexp.MustCompile(`\("(\w+)", ctypes`).FindAllStringSubmatch(cls, -1) {
		pyFields = append(pyFields, m[1])
	}
	if m := regexp.MustCompile(`\(n, ctypes.c_longlong \* 3\) for n in \(([^)]*)\)`).FindStringSubmatch(cls); m != nil {
		var strides []string
		for _, s := range regexp.MustCompile(`"(\w+)"`).FindAllStringSubmatch(m[1], -1) {
			strides = append(strides, s[1])
		}
		// the stride fields follow the five ints
		if len(pyFields) >= 5 {
			pyFields = append(append(append([]string{}, pyFields[:5]...), strides...), pyFields[5:]...)
		}
	}
	if strings.Join(cFields, ",") != strings.Join(pyFields, ",") {
		t.Errorf("MaskcBwdShape fields differ:\n C:      %v\n Python: %v", cFields, pyFields)
	}
}
