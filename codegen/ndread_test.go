package codegen

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/internal/hostcuda"
)

// TestNDReadsOnHost compiles the accessors of buffers of rank 1 to
// MaxBufferRank (writeReader: the long long and int overloads and the
// flagged ones) as host C++ and calls them at every index tuple of the box
// that reaches one past each extent on both sides. Row-major order is the
// lexicographic order of index tuples, so the k-th in-range tuple of that
// walk must read element k (an expectation independent of the offset
// formula); every tuple with an index outside its extent must read the
// dtype's zero without touching memory (the program runs under
// AddressSanitizer, which fails any read outside the allocation) and,
// through the flagged accessor only, set MASKC_STATUS_READ_OUT_OF_RANGE.
func TestNDReadsOnHost(t *testing.T) {
	cases := []struct {
		dtype string
		dims  []int
		decl  []string // the declared extents when not dims (the accessor's form depends on them)
	}{
		{"i32", []int{5}, nil},
		{"f32", []int{3, 4}, nil},
		{"i32", []int{2, 3, 4}, nil},
		{"i64", []int{1, 4, 1}, nil},
		{"bf16", []int{3, 1, 5}, nil},
		{"f32", []int{2, 3, 2, 3}, nil},
		{"u8", []int{2, 2, 3, 1, 2}, nil},
		{"i16", []int{1, 2, 1, 2, 3, 1}, nil},
		{"bool", []int{2, 2, 2, 2, 2, 2, 2, 2}, nil},
		{"f64", []int{1, 1, 1, 1, 1, 1, 1, 3}, nil},
		// trailing extents that may reach 2^31: the 64 x 64-bit offset
		{"i32", []int{2, 3, 4}, []string{"2", "2 * KV", "4"}},
		{"f32", []int{3, 2, 2, 3}, []string{"H", "2", "Q + KV", "3"}},
	}
	cxx := hostcuda.Cxx(t)
	var src strings.Builder
	src.WriteString(hostPrelude)
	src.WriteString(hipsrc.ABIHeader() + hipsrc.Runtime)
	src.WriteString("#include <stdint.h>\n")
	var body strings.Builder
	for k, c := range cases {
		if len(c.dims) > MaxBufferRank {
			t.Fatalf("case %d: rank %d", k, len(c.dims))
		}
		dims := make([]string, len(c.dims))
		n := 1
		for i, d := range c.dims {
			dims[i] = fmt.Sprint(d)
			n *= d
		}
		if c.decl != nil {
			dims = c.decl
		}
		b := &BufferABI{Name: fmt.Sprintf("t%d", k), Slot: k % MaxBuffers, DType: c.dtype, Dims: dims}
		var w strings.Builder
		writeReader(&w, b, true)
		// Rank 3 and up with trailing extents below 2^31: the int
		// accessor's offset from its 32-bit extents.
		if narrow := len(c.dims) >= 3 && c.decl == nil; strings.Contains(w.String(), "(unsigned long long)(unsigned)i0") != narrow {
			t.Fatalf("case %d (%s[%s]): narrow offset %v expected:\n%s", k, c.dtype, strings.Join(dims, ", "), narrow, w.String())
		}
		src.WriteString(w.String())
		info := elemType(c.dtype)
		// The elements: distinct bit patterns (every byte of the
		// allocation written, so that any element can be told apart).
		fmt.Fprintf(&body, "  {  // case %d: %s%v declared [%s]\n", k, c.dtype, c.dims, strings.Join(dims, ", "))
		fmt.Fprintf(&body, "    const long long n = %d;\n", n)
		fmt.Fprintf(&body, "    %s* data = (%s*)malloc(n * sizeof(%s));\n", info.storage, info.storage, info.storage)
		fmt.Fprintf(&body, "    for (long long j = 0; j < n; ++j) data[j] = (%s)(%s);\n", info.storage, map[bool]string{true: "j % 2", false: "j * 3 + 1"}[c.dtype == "bool"])
		body.WriteString("    MaskcBuffers buf;\n    memset(&buf, 0, sizeof buf);\n")
		fmt.Fprintf(&body, "    buf.ptr[%d] = data;\n", b.Slot)
		for d := 0; d < MaxBufferRank; d++ {
			e := 1
			if d < len(c.dims) {
				e = c.dims[d]
			}
			fmt.Fprintf(&body, "    buf.dim[%d][%d] = %d;\n", b.Slot, d, e)
		}
		body.WriteString("    unsigned status[MASKC_STATUS_WORDS] = {0};\n    buf.status = status;\n")
		body.WriteString("    long long k = 0;  // the in-range tuples seen: the row-major offset of the next one\n")
		var idx, idx32 []string
		for d, e := range c.dims {
			fmt.Fprintf(&body, "    %sfor (long long i%d = -1; i%d <= %d; ++i%d)\n", strings.Repeat("  ", d), d, d, e, d)
			idx = append(idx, fmt.Sprintf("i%d", d))
			idx32 = append(idx32, fmt.Sprintf("(int)i%d", d))
		}
		var in []string
		for d, e := range c.dims {
			in = append(in, fmt.Sprintf("i%d >= 0 && i%d < %d", d, d, e))
		}
		ind := strings.Repeat("  ", len(c.dims))
		fmt.Fprintf(&body, "    %s{\n", ind)
		fmt.Fprintf(&body, "    %s  const bool in = %s;\n", ind, strings.Join(in, " && "))
		fmt.Fprintf(&body, "    %s  const %s want = in ? %s : %s;\n", ind, info.value, fmt.Sprintf(info.read, "data[k]"), info.zero)
		fmt.Fprintf(&body, "    %s  status[0] = 0;\n", ind)
		for _, call := range []struct {
			fn, args string
			flags    bool
		}{
			{readerName(b), strings.Join(idx, ", "), false},
			{readerName(b), strings.Join(idx32, ", "), false},
			{flaggedReaderName(b), strings.Join(idx, ", "), true},
			{flaggedReaderName(b), strings.Join(idx32, ", "), true},
		} {
			fmt.Fprintf(&body, "    %s  if (%s(buf, %s) != want) { fprintf(stderr, \"case %d: %s(%s) read %%s at k=%%lld\\n\", in ? \"the wrong element\" : \"memory outside\", k); return 1; }\n",
				ind, call.fn, call.args, k, call.fn, call.args)
			want := "0u"
			if call.flags {
				want = "(in ? 0u : (unsigned)MASKC_STATUS_READ_OUT_OF_RANGE)"
			}
			fmt.Fprintf(&body, "    %s  if (status[0] != %s) { fprintf(stderr, \"case %d: %s(%s): status %%u\\n\", status[0]); return 2; }\n", ind, want, k, call.fn, call.args)
			fmt.Fprintf(&body, "    %s  status[0] = 0;\n", ind)
		}
		fmt.Fprintf(&body, "    %s  k += in;\n", ind)
		fmt.Fprintf(&body, "    %s}\n", ind)
		fmt.Fprintf(&body, "    if (k != n) { fprintf(stderr, \"case %d: %%lld in-range tuples, want %%lld\\n\", k, n); return 3; }\n", k)
		fmt.Fprintf(&body, "    printf(\"case %d ok\\n\");\n    free(data);\n  }\n", k)
	}
	src.WriteString("\nint main() {\n" + body.String() + "  return 0;\n}\n")
	out, err := runUnderASan(t, cxx, src.String())
	if err != nil {
		t.Fatalf("N-D reads: %v\n%s", err, out)
	}
	if got := strings.Count(string(out), " ok\n"); got != len(cases) {
		t.Fatalf("%d of %d cases ran:\n%s", got, len(cases), out)
	}
}

// TestTrailingExtentsFit31: which declarations take the int accessor's
// 32-bit-extent offset (every extent past the first at most 2^31 - 1 at
// every size the ABI allows).
func TestTrailingExtentsFit31(t *testing.T) {
	for _, tc := range []struct {
		dims []string
		want bool
	}{
		{[]string{"H", "256", "4"}, true},
		{[]string{"2147483647", "2147483647", "1"}, true},
		{[]string{"H", "2147483648", "4"}, false},
		{[]string{"B", "H", "Q", "KV"}, true},
		{[]string{"B", "KV + 256", "3"}, true},
		{[]string{"B", "KV + 257", "3"}, false},
		{[]string{"B", "2 * KV - 1", "3"}, false},
		{[]string{"B", "Q + KV", "3"}, false},
		{[]string{"B", "4 - H", "3"}, true},
		{[]string{"B", "H * 2", "3"}, false},
		{[]string{"B", "KV // 2", "3"}, true}, // floor-divided extents: monotone, largest at a corner
		{[]string{"B", "(2 * KV + 512) // 2", "3"}, true},
		{[]string{"B", "(2 * KV + 514) // 2", "3"}, false},
		{[]string{"B", "(4 * KV + 3) // 2", "3"}, false},
		{[]string{"B", "(4 - H) // 2", "3"}, true},
		{[]string{"B", "(Q - KV + 2147483647) // 1", "3"}, false},
		{[]string{"B", "(Q - KV + 2147483647) // 2", "3"}, true},
		{[]string{"B", "H", "KV // 0"}, false},
		{[]string{"B", "x", "3"}, false},
	} {
		if got := trailingExtentsFit31(&BufferABI{Dims: tc.dims}); got != tc.want {
			t.Errorf("%v: %v, want %v", tc.dims, got, tc.want)
		}
	}
}

// TestBufferDimsAreCheckedTexts: the extents a kernel's buffer table (and
// so the manifest, the Go launcher and the Python package) carries are the
// checker's texts, params and -D overrides folded, so every consumer can
// evaluate them with hipsrc.EvalDims; a param name written in a
// declaration was carried as written before and no launcher could
// evaluate it.
func TestBufferDimsAreCheckedTexts(t *testing.T) {
	src := "param N = 8\nparam BLK = 64\nbuffer t: f32[N * 2, (Q + BLK - 1) // BLK, KV * 1]\n" +
		"score s(score, b, h, q, kv) = score + t[h % 16, q // 64, kv]\nattention a {\n    score = s\n}\n"
	p := checkSource(t, "in.flex", src)
	k, diags := Generate(p, p.Attentions[0], Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Render())
	}
	want := []string{"16", "(Q + 63) // 64", "KV"}
	if got := k.Buffers[0].Dims; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("dims %q, want %q", got, want)
	}
	ext, err := hipsrc.EvalDims(k.Buffers[0].Dims, map[string]int64{"B": 1, "H": 2, "HKV": 2, "Q": 130, "KV": 7})
	if err != nil || ext[0] != 16 || ext[1] != 3 || ext[2] != 7 {
		t.Fatalf("extents %v, %v", ext, err)
	}
}

// TestZeroDReadsOnHost compiles the accessor of a 0-d buffer (a captured
// scalar tensor, `buffer offset: i32[]`) for every element type as host
// C++ and reads a one-element allocation through it under
// AddressSanitizer: it reads element 0, whatever MaskcBuffers.dim holds
// for the slot (a launcher writes 1s past a buffer's rank), and has no
// index to check, so no flagged variant.
func TestZeroDReadsOnHost(t *testing.T) {
	cxx := hostcuda.Cxx(t)
	var src, body strings.Builder
	src.WriteString(hostPrelude)
	src.WriteString(hipsrc.ABIHeader() + hipsrc.Runtime)
	src.WriteString("#include <stdint.h>\n")
	for k, dtype := range []string{"i32", "i64", "u8", "i8", "i16", "f16", "bf16", "f32", "f64", "bool"} {
		b := &BufferABI{Name: "s" + dtype, Slot: k % MaxBuffers, DType: dtype, Dims: []string{}}
		var w strings.Builder
		writeReader(&w, b, true)
		if strings.Contains(w.String(), "_flagged") || strings.Contains(w.String(), "buf.dim") {
			t.Fatalf("%s: a 0-d accessor with an index check:\n%s", dtype, w.String())
		}
		src.WriteString(w.String())
		info := elemType(dtype)
		v := map[bool]string{true: "1", false: "5"}[dtype == "bool"]
		fmt.Fprintf(&body, "  {\n    %s* data = (%s*)malloc(sizeof(%s));\n    data[0] = (%s)(%s);\n", info.storage, info.storage, info.storage, info.storage, v)
		fmt.Fprintf(&body, "    MaskcBuffers buf;\n    memset(&buf, 0, sizeof buf);\n    buf.ptr[%d] = data;\n", b.Slot)
		fmt.Fprintf(&body, "    for (int d = 0; d < %d; ++d) buf.dim[%d][d] = 1;\n", MaxBufferRank, b.Slot)
		fmt.Fprintf(&body, "    if (%s(buf) != %s) { fprintf(stderr, \"%s: wrong value\\n\"); return 1; }\n", readerName(b), fmt.Sprintf(info.read, "data[0]"), dtype)
		fmt.Fprintf(&body, "    printf(\"%s ok\\n\");\n    free(data);\n  }\n", dtype)
	}
	src.WriteString("\nint main() {\n" + body.String() + "  return 0;\n}\n")
	out, err := runUnderASan(t, cxx, src.String())
	if err != nil || strings.Count(string(out), " ok\n") != 10 {
		t.Fatalf("0-d reads: %v\n%s", err, out)
	}
}

// runUnderASan compiles a host C++ program with cxx under AddressSanitizer
// (a read past a buffer's allocation fails it) and returns its output.
func runUnderASan(t *testing.T, cxx, src string) ([]byte, error) {
	t.Helper()
	dir := t.TempDir()
	srcPath, exe := filepath.Join(dir, "reads.cc"), filepath.Join(dir, "reads")
	if err := os.WriteFile(srcPath, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cxx, "-O0", "-std=c++14", "-Wall", "-Wno-unused-variable", "-Wno-unused-function", "-fsanitize=address", "-o", exe, srcPath).CombinedOutput(); err != nil {
		t.Fatalf("g++ failed: %v\n%s", err, out)
	}
	run := exec.Command(exe)
	run.Env = append(os.Environ(), "ASAN_OPTIONS=detect_leaks=0")
	return run.CombinedOutput()
}
