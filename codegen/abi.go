package codegen

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/maskc/maskc/buftype"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/hipsrc"
)

// ABI limits of MaskcBuffers, the struct that carries captured tensors into
// a generated kernel (hipsrc.BuffersStruct).
const (
	// MaxBuffers is the number of captured tensors a kernel can take.
	MaxBuffers = hipsrc.MaxBuffers
	// MaxBufferRank is the number of dimensions a captured tensor can have.
	MaxBufferRank = hipsrc.MaxBufferRank
)

// BufferABI describes one entry of MaskcBuffers: which declared buffer goes
// into ptr[Slot], its element type, and its extents.
type BufferABI struct {
	// Name is the buffer's name in the .flex file, e.g. "doc".
	Name string
	// Slot is the index into MaskcBuffers.ptr and .dim.
	Slot int
	// DType is the element type as declared: i32, i64, f16, bf16, f32, f64 or bool.
	DType string
	// Dims are the declared extents as .flex expressions, e.g. ["H", "8191"],
	// 0 (a scalar tensor) to MaxBufferRank of them. The launcher passes the evaluated extents
	// in MaskcBuffers.dim[Slot], outermost first (1 past the buffer's rank).
	Dims []string
	// Segments reports the `segments` property: non-decreasing document ids.
	Segments bool
	// Decl is the declaration.
	Decl *dsl.BufferDecl
}

// Manifest returns the manifest's description of b.
func (b *BufferABI) Manifest() hipsrc.BufferSlot {
	return hipsrc.BufferSlot{Name: b.Name, Slot: b.Slot, DType: b.DType, ElemBytes: hipsrc.BufferElemBytes(b.DType), Dims: b.Dims, Segments: b.Segments}
}

// elemInfo says how a buffer element type is stored and read.
type elemInfo struct {
	storage string // C type of one stored element
	value   cType  // C type the accessor returns
	read    string // format turning the element expression %s into value
	zero    string // value returned for an out-of-range read
}

// elemTypeOf reads buffer dtype's row of the buftype table; ok is false
// for an unknown dtype.
func elemTypeOf(dtype string) (info elemInfo, ok bool) {
	d := buftype.Lookup(dtype)
	if d == nil {
		return elemInfo{}, false
	}
	value := map[buftype.CValue]cType{buftype.CInt32: cInt32, buftype.CInt64: cInt,
		buftype.CFloat32: cFloat, buftype.CFloat64: cDouble, buftype.CBool: cBool}[d.CValue]
	return elemInfo{d.CStorage, value, d.CRead, d.CZero}, true
}

// elemType is elemTypeOf for a dtype the buffer table already accepted.
func elemType(dtype string) elemInfo {
	info, _ := elemTypeOf(dtype)
	return info
}

// BufferTable builds the MaskcBuffers layout for the buffers that the given
// lowered expressions read: declaration (source) order, at most MaxBuffers,
// each of rank at most MaxBufferRank. Nil expressions are skipped.
func BufferTable(src *dsl.Source, ls ...*dsl.Lowered) ([]BufferABI, dsl.Diagnostics) {
	var diags dsl.Diagnostics
	seen := map[*dsl.BufferDecl]bool{}
	var decls []*dsl.BufferDecl
	for _, l := range ls {
		if l == nil {
			continue
		}
		for _, d := range l.Buffers {
			if !seen[d] {
				seen[d] = true
				decls = append(decls, d)
			}
		}
	}
	sort.SliceStable(decls, func(i, j int) bool { return decls[i].Sp.Start < decls[j].Sp.Start })
	var out []BufferABI
	for _, d := range decls {
		if len(out) == MaxBuffers {
			diags.Add(src, d.Name.Sp, CodeTooManyBuffers, "buffer %s is captured buffer number %d of %d; a generated kernel takes at most %d", d.Name.Name, len(out)+1, len(decls), MaxBuffers).
				WithHint("pack small buffers into one (e.g. a [%d, N] table) or drop unused ones", MaxBuffers)
			break
		}
		if len(d.Dims) > MaxBufferRank {
			diags.Add(src, d.Sp, CodeBufferRank, "buffer %s has %d dimensions; a generated kernel reads buffers of 0 to %d dimensions", d.Name.Name, len(d.Dims), MaxBufferRank).
				WithHint("flatten some dimensions and compute the index in the mask, e.g. t[i * N + j] for t[i, j]")
			continue
		}
		dtype := ""
		if d.DType != nil {
			dtype = d.DType.Name
		}
		if _, ok := elemTypeOf(dtype); !ok {
			sp := d.Sp
			if d.DType != nil {
				sp = d.DType.Sp
			}
			diags.Add(src, sp, CodeBufferDType, "cannot read buffer %s of element type %q", d.Name.Name, dtype).
				WithHint("declare it as one of %s", buftype.Names())
			continue
		}
		dims := d.Extents // the checker's texts, params folded
		if len(dims) != len(d.Dims) {
			dims = make([]string, len(d.Dims)) // a declaration built without the checker (tests)
			for i, e := range d.Dims {
				dims[i] = exprText(e)
			}
		}
		out = append(out, BufferABI{
			Name: d.Name.Name, Slot: len(out), DType: dtype, Dims: dims,
			Segments: d.Property != nil && d.Property.Name == "segments", Decl: d,
		})
	}
	return out, diags
}

// bufParams is the parameter list of a buffer's accessor: the buffers and
// the indices params (none for a 0-d buffer).
func bufParams(params []string) string {
	return strings.Join(append([]string{"const MaskcBuffers& buf"}, params...), ", ")
}

// cName turns a .flex name into a C identifier fragment.
func cName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// readerName is the accessor function of a buffer.
func readerName(b *BufferABI) string { return "maskc_read_" + cName(b.Name) }

// writeReader emits the guarded accessors of one buffer: an overload on
// long long indices and one on int indices (called when every index is
// known to be an int32, see intrange.go). An index outside the buffer's
// extents never reads memory: the accessor returns zero (false for bool)
// instead. The launchers refuse a call at whose sizes a read that can
// change the result would fall outside (readbounds.go, hipsrc.CheckRead),
// so the zero is only seen on pairs the mask removes (score reads of
// partial tiles) and by reads whose index comes from buffer values.
//
// The int overload checks i < n as (unsigned)i < m with m = min(n, 2^31):
// a negative i becomes >= 2^31 >= m and fails; a non-negative i (< 2^31)
// passes exactly when i < n, also when n >= 2^31.
//
// With flagged, it also emits the flagged accessors (flaggedReaderName),
// which the reads whose index is computed from buffer values call: the
// same, and an index outside the extents also sets
// MASKC_STATUS_READ_OUT_OF_RANGE in status word 0 (the launcher cannot
// bound such an index from the sizes; readbounds.go).
//
// A 0-d buffer (a captured scalar tensor) has one accessor of no index,
// which reads element 0: every buffer a launcher passes has at least one
// element, and it has no index to fall outside.
func writeReader(w *strings.Builder, b *BufferABI, flagged bool) {
	if len(b.Dims) == 0 {
		info := elemType(b.DType)
		elem := fmt.Sprintf("((const %s*)buf.ptr[%d])[0]", info.storage, b.Slot)
		fmt.Fprintf(w, "// buffer %s: %s[] in buf.ptr[%d], 0-d: its one element\n", b.Name, b.DType, b.Slot)
		fmt.Fprintf(w, "__device__ __forceinline__ %s %s(const MaskcBuffers& buf) {\n  return %s;\n}\n\n", info.value, readerName(b), fmt.Sprintf(info.read, elem))
		return
	}
	writeReader64(w, b, false)
	writeReader32(w, b, false)
	if flagged {
		fmt.Fprintf(w, "// buffer %s read at an index computed from buffer values: out of range also sets MASKC_STATUS_READ_OUT_OF_RANGE\n", b.Name)
		writeReader64(w, b, true)
		writeReader32(w, b, true)
	}
}

// flaggedReaderName is the accessor of b that records an out-of-range read.
func flaggedReaderName(b *BufferABI) string { return readerName(b) + "_flagged" }

// flagLine is the statement of a flagged accessor that records an
// out-of-range read (a launcher of an older ABI passes no status words).
const flagLine = "  if (!ok && buf.status != nullptr) atomicOr(buf.status, MASKC_STATUS_READ_OUT_OF_RANGE);\n"

func writeReader32(w *strings.Builder, b *BufferABI, flagged bool) {
	info := elemType(b.DType)
	var params, conds []string
	for i := range b.Dims {
		params = append(params, fmt.Sprintf("int i%d", i))
	}
	name := readerName(b)
	if flagged {
		name = flaggedReaderName(b)
	}
	fmt.Fprintf(w, "__device__ __forceinline__ %s %s(const MaskcBuffers& buf, %s) {\n", info.value, name, strings.Join(params, ", "))
	for i := range b.Dims {
		fmt.Fprintf(w, "  const long long n%d = buf.dim[%d][%d];\n", i, b.Slot, i)
		fmt.Fprintf(w, "  const unsigned m%d = n%d <= 0 ? 0u : n%d < 0x80000000LL ? (unsigned)n%d : 0x80000000u;\n", i, i, i, i)
		conds = append(conds, fmt.Sprintf("(unsigned)i%d < m%d", i, i))
	}
	fmt.Fprintf(w, "  const bool ok = %s;\n", strings.Join(conds, " && "))
	if flagged {
		w.WriteString(flagLine)
	}
	at := rowMajor(len(b.Dims), "(long long)")
	if len(b.Dims) >= 3 && trailingExtentsFit31(b) {
		// Every extent past the first is declared below 2^31, so the
		// launcher's n_d (the declaration evaluated) equals m_d: the
		// offset from the 32-bit extents, each product 64 x 32 bits
		// (AMD's v_mad_u64_u32) instead of 64 x 64 with both halves of
		// every extent held in scalar registers. Were some n_d larger,
		// m_d <= n_d still keeps the offset below the element count.
		at = "(long long)(" + rowMajorWith(len(b.Dims), "(unsigned long long)(unsigned)", "(unsigned)", "m") + ")"
	}
	fmt.Fprintf(w, "  const long long at = ok ? %s : 0;\n", at)
	elem := fmt.Sprintf("((const %s*)buf.ptr[%d])[at]", info.storage, b.Slot)
	fmt.Fprintf(w, "  return ok ? %s : %s;\n}\n\n", fmt.Sprintf(info.read, elem), info.zero)
}

// trailingExtentsFit31 reports whether every declared extent of b past the
// first is at most 2^31 - 1 at every size the ABI allows (B, H, HKV up to
// MaxHeadsOrBatch, Q and KV up to MaxSeqLen): constants below 2^31, KV, H,
// KV + 1, (2 * KV + 63) // 64, but not 2 * KV. An extent is a linear form
// L of the sizes, or L // c for a positive int constant c (the checker's
// E033). L takes its largest value over the box of sizes at one of its
// corners (each size at 1 or at its largest), and x -> x // c is
// non-decreasing for c > 0, so L // c does too: the largest value of
// every extent is the largest of its values at the 32 corners, each
// measured with hipsrc.EvalDims. An extent that does not evaluate at some
// corner does not fit.
func trailingExtentsFit31(b *BufferABI) bool {
	names := []string{"B", "H", "HKV", "Q", "KV"}
	top := []int64{MaxHeadsOrBatch, MaxHeadsOrBatch, MaxHeadsOrBatch, MaxSeqLen, MaxSeqLen}
	if len(b.Dims) < 2 {
		return true
	}
	for corner := 0; corner < 1<<len(names); corner++ {
		sizes := map[string]int64{}
		for i, n := range names {
			sizes[n] = 1
			if corner&(1<<i) != 0 {
				sizes[n] = top[i]
			}
		}
		vals, err := hipsrc.EvalDims(b.Dims[1:], sizes)
		if err != nil {
			return false
		}
		for _, v := range vals {
			if v > math.MaxInt32 {
				return false
			}
		}
	}
	return true
}

func writeReader64(w *strings.Builder, b *BufferABI, flagged bool) {
	info := elemType(b.DType)
	name := readerName(b)
	if flagged {
		name = flaggedReaderName(b)
	} else {
		fmt.Fprintf(w, "// buffer %s: %s[%s] in buf.ptr[%d]; an out-of-range read yields %s and touches no memory\n",
			b.Name, b.DType, strings.Join(b.Dims, ", "), b.Slot, info.zero)
	}
	var params []string
	for i := range b.Dims {
		params = append(params, fmt.Sprintf("long long i%d", i))
	}
	fmt.Fprintf(w, "__device__ __forceinline__ %s %s(%s) {\n", info.value, name, bufParams(params))
	var conds []string
	for i := range b.Dims {
		fmt.Fprintf(w, "  const long long n%d = buf.dim[%d][%d];\n", i, b.Slot, i)
		conds = append(conds, fmt.Sprintf("i%d >= 0 && i%d < n%d", i, i, i))
	}
	fmt.Fprintf(w, "  const bool ok = %s;\n", strings.Join(conds, " && "))
	if flagged {
		w.WriteString(flagLine)
	}
	fmt.Fprintf(w, "  const long long at = ok ? %s : 0;\n", rowMajor(len(b.Dims), ""))
	elem := fmt.Sprintf("((const %s*)buf.ptr[%d])[at]", info.storage, b.Slot)
	fmt.Fprintf(w, "  return ok ? %s : %s;\n}\n\n", fmt.Sprintf(info.read, elem), info.zero)
}

// rowMajor is the C offset of element (i0, ..., i{rank-1}) of a row-major
// buffer of extents n0, ..., n{rank-1}: i0 for rank 1, i0 * n1 + i1 for
// rank 2, (i0 * n1 + i1) * n2 + i2 for rank 3, and so on (Horner's rule).
// cast converts i0 to long long (the int accessor's "(long long)"), so
// that every product is 64-bit. Under the accessor's bounds check every
// partial sum is below the product of the extents it has covered, so no
// product overflows: the element count of a buffer that exists fits.
func rowMajor(rank int, cast string) string {
	return rowMajorWith(rank, cast, "", "n")
}

// rowMajorWith is rowMajor with i0 converted by cast, every other index by
// icast and the extents named ext0, ext1, ... (n: the long long extents; m:
// the int accessor's unsigned ones).
func rowMajorWith(rank int, cast, icast, ext string) string {
	if rank == 0 {
		return "0" // a 0-d buffer's one element
	}
	at := cast + "i0"
	for i := 1; i < rank; i++ {
		if i > 1 {
			at = "(" + at + ")"
		}
		at = fmt.Sprintf("%s * %s%d + %si%d", at, ext, i, icast, i)
	}
	return at
}

// segSortedName is the function that says whether a segments buffer's ids
// were found non-decreasing for this launch (writeSegmentSearch).
func segSortedName(b *BufferABI) string { return "maskc_seg_sorted_" + cName(b.Name) }

// segCheckBuffers are the buffers maskc_seg_check checks: the `segments`
// buffers of a dtype that may hold document ids (buftype.CanSegment).
func segCheckBuffers(bufs []BufferABI) []*BufferABI {
	var out []*BufferABI
	for i := range bufs {
		if b := &bufs[i]; b.Segments && buftype.CanSegment(b.DType) {
			out = append(out, b)
		}
	}
	return out
}

// writeSegCheck emits maskc_g_seg_check, the body of the maskc_seg_check
// entry (hipsrc/attn_fwd.h, one block launched before every forward and
// backward): for each segments buffer, whether every row along its last
// dimension (a 1-D buffer is one row, a 2-D [B, KV] buffer B rows) is
// non-decreasing, written to
// status word 1 + slot, and MASKC_STATUS_SEGMENTS_UNSORTED or-ed into word 0
// when one is not. The searches (writeSegmentSearch) narrow nothing and no
// tile is proven full through a buffer whose word is 0, so the kernel
// computes the mask as written for any ids; sorted ids keep the searches.
func writeSegCheck(w *strings.Builder, bufs []*BufferABI) {
	if len(bufs) == 0 {
		return
	}
	w.WriteString("// The segments buffers maskc_seg_check checks before every launch (the whole block calls it).\n")
	w.WriteString("#define MASKC_SEG_CHECK 1\n")
	w.WriteString("__device__ __forceinline__ void maskc_g_seg_check(const MaskcBuffers& buf) {\n")
	for _, b := range bufs {
		// rows: the product of the extents before the last; n: the last.
		ctype, rows, n := elemType(b.DType).storage, "1", fmt.Sprintf("buf.dim[%d][%d]", b.Slot, len(b.Dims)-1)
		for i := 0; i < len(b.Dims)-1; i++ {
			d := fmt.Sprintf("buf.dim[%d][%d]", b.Slot, i)
			if i == 0 {
				rows = d
			} else {
				rows += " * " + d
			}
		}
		fmt.Fprintf(w, "  {  // %s: %s[%s]\n", b.Name, b.DType, strings.Join(b.Dims, ", "))
		fmt.Fprintf(w, "    const %s* ids = (const %s*)buf.ptr[%d];\n", ctype, ctype, b.Slot)
		fmt.Fprintf(w, "    const long long rows = %s, n = %s;\n", rows, n)
		w.WriteString("    int bad = 0;\n")
		w.WriteString("    const long long s = blockDim.x;\n")
		w.WriteString("    for (long long r = 0; r < rows; ++r) {\n")
		w.WriteString("      const long long base = r * n;\n")
		w.WriteString("      // four strided pairs per round: their loads are independent, one latency per round\n")
		w.WriteString("      for (long long i = 1 + (long long)threadIdx.x; i < n; i += 4 * s) {\n")
		w.WriteString("        for (int u = 0; u < 4; ++u) {\n")
		w.WriteString("          const long long j = i + u * s;\n")
		w.WriteString("          if (j < n) bad |= ids[base + j] < ids[base + j - 1];\n")
		w.WriteString("        }\n")
		w.WriteString("      }\n")
		w.WriteString("    }\n")
		w.WriteString("    bad = __syncthreads_or(bad);\n")
		w.WriteString("    if (threadIdx.x == 0 && buf.status != nullptr) {\n")
		fmt.Fprintf(w, "      buf.status[1 + %d] = bad ? 0u : 1u;\n", b.Slot)
		w.WriteString("      if (bad) atomicOr(buf.status, MASKC_STATUS_SEGMENTS_UNSORTED);\n")
		w.WriteString("    }\n  }\n")
	}
	w.WriteString("}\n\n")
}

// writeSegmentSearch emits searches over a `segments` buffer (its values
// are non-decreasing): the first index whose value is >= v, and the first
// index whose value is > v. They are warp-collective (the kernel calls
// maskc_kv_range with the same arguments on every lane of a warp): each
// round probes MASKC_WARP_SIZE evenly spaced entries at once and keeps the
// gap where the values cross v, so 8192 entries take 3 dependent reads on
// 32 lanes instead of a 13-step binary search.
func writeSegmentSearch(w *strings.Builder, b *BufferABI) {
	name := cName(b.Name)
	fmt.Fprintf(w, "// Whether %s's ids are non-decreasing for this launch, so that the searches below\n", b.Name)
	fmt.Fprintf(w, "// find its documents: maskc_seg_check wrote status word 1 + %d before the launch. Without\n", b.Slot)
	fmt.Fprintf(w, "// status words nothing was checked: false, and every use of a search falls back to no narrowing.\n")
	fmt.Fprintf(w, "__device__ __forceinline__ bool %s(const MaskcBuffers& buf) {\n", segSortedName(b))
	fmt.Fprintf(w, "  return buf.status != nullptr && buf.status[1 + %d] != 0u;\n}\n\n", b.Slot)
	for _, s := range []struct{ fn, cmp, what string }{
		{"maskc_seg_first_" + name, "<", "first index i with " + b.Name + "[i] >= v"},
		{"maskc_seg_end_" + name, "<=", "first index i with " + b.Name + "[i] > v"},
	} {
		fmt.Fprintf(w, "// %s (%s is declared segments: non-decreasing); warp-collective\n", s.what, b.Name)
		fmt.Fprintf(w, "__device__ __forceinline__ long long %s(const MaskcBuffers& buf, long long v) {\n", s.fn)
		fmt.Fprintf(w, "  long long lo = 0, hi = buf.dim[%d][0];  // the answer is in [lo, hi]\n", b.Slot)
		fmt.Fprintf(w, "  while (lo < hi) {\n")
		fmt.Fprintf(w, "    const long long step = (hi - lo + MASKC_WARP_SIZE - 1) / MASKC_WARP_SIZE;\n")
		fmt.Fprintf(w, "    // probes lo, lo + step, ...: those %s v are a prefix\n", s.cmp)
		fmt.Fprintf(w, "    const int below = maskc_warp_count([&](int lane) {\n")
		fmt.Fprintf(w, "      const long long i = lo + lane * step;\n")
		fmt.Fprintf(w, "      return i < hi && %s(buf, i) %s v;\n", readerName(b), s.cmp)
		fmt.Fprintf(w, "    });\n")
		fmt.Fprintf(w, "    if (below == 0) return lo;\n")
		fmt.Fprintf(w, "    const long long last = lo + (below - 1) * step;  // the last probe %s v\n", s.cmp)
		fmt.Fprintf(w, "    hi = last + step < hi ? last + step : hi;\n")
		fmt.Fprintf(w, "    lo = last + 1;\n")
		fmt.Fprintf(w, "  }\n  return lo;\n}\n\n")
	}
	// The same searches for one lane alone (a binary search: lanes may ask
	// for different values), for maskc_kv_intervals_lane's per-row walks.
	for _, s := range []struct{ fn, cmp, what string }{
		{"maskc_seg_first_" + name + "_lane", "<", "first index i with " + b.Name + "[i] >= v"},
		{"maskc_seg_end_" + name + "_lane", "<=", "first index i with " + b.Name + "[i] > v"},
	} {
		fmt.Fprintf(w, "// %s (%s is declared segments: non-decreasing); per lane\n", s.what, b.Name)
		fmt.Fprintf(w, "__device__ __forceinline__ long long %s(const MaskcBuffers& buf, long long v) {\n", s.fn)
		fmt.Fprintf(w, "  long long lo = 0, hi = buf.dim[%d][0];  // the answer is in [lo, hi]\n", b.Slot)
		fmt.Fprintf(w, "  while (lo < hi) {\n")
		fmt.Fprintf(w, "    const long long mid = lo + (hi - lo) / 2;\n")
		fmt.Fprintf(w, "    if (%s(buf, mid) %s v) lo = mid + 1; else hi = mid;\n", readerName(b), s.cmp)
		fmt.Fprintf(w, "  }\n  return lo;\n}\n\n")
	}
}
