package hipsrc

import (
	"fmt"
	"math"
	"strings"
)

// The kernel ABI: the one definition of what a launcher passes to a
// generated kernel and how it launches it. Everything else derives from it:
// the C declarations compiled into every kernel (ABIHeader, abi.h), the Go
// runtime's argument structs (checked against ShapeStruct and BuffersStruct
// by its tests), and the "abi" section of manifest.json (MANIFEST.md), which
// the Python package (python/maskc/abi.py) reads.

// ABIVersion is the version of the kernel ABI and of the manifest schema
// (MANIFEST.md); it changes whenever a struct, an entry point, the grid
// rule or a manifest field changes meaning (3: the position frame in
// MaskcBuffers; the backward's tiles per platform and head dim,
// kernels[].bwd_launch; 4: the status words, MaskcBuffers.status and
// abi.status; 5: MaskcBuffers.dim carries MaxBufferRank = 8 extents per
// buffer, was 2; 6: MaskcBwdShape.dq_sem, the ordered deterministic dQ;
// 7: the forward's last parameter, MaskcTensorMaps, and
// launch[platform].tensor_maps; 8: MaskcTensorMaps.dout, maskc_attn_bwd's
// last parameter MaskcTensorMaps and bwd_launch[platform].tensor_maps).
const ABIVersion = 8

// MaxSeqLen is the longest Sq and Skv a kernel may be launched with:
// 2^31 - 257. MaskcShape's lengths are C ints with 256 of headroom for tile
// arithmetic, and the code generator narrows index arithmetic to 32 bits
// under exactly this bound; every launcher refuses longer sequences.
const MaxSeqLen = math.MaxInt32 - 256

// Entry point names (C linkage).
const (
	// AttentionEntry is the forward kernel.
	AttentionEntry = "maskc_attn_fwd"
	// TileFlagsEntry is the pre-pass kernel of SparsityPrepass kernels.
	TileFlagsEntry = "maskc_tile_flags"
	// SegCheckEntry checks the order of a kernel's segments buffers into
	// the status words; kernels with integer segments buffers have it.
	SegCheckEntry = "maskc_seg_check"
	// DecodeEntry and DecodeMergeEntry are the split-KV decode kernel and
	// the merge of its splits (attn_decode.h).
	DecodeEntry, DecodeMergeEntry = "maskc_attn_decode", "maskc_attn_decode_merge"
)

// Limits of MaskcBuffers, the struct that carries captured tensors.
const (
	// MaxBuffers is the number of captured tensors a kernel can take.
	MaxBuffers = 8
	// MaxBufferRank is the number of dimensions a captured tensor can have:
	// the extents MaskcBuffers.dim carries per slot, and the rank every
	// reader (the generated accessors, the Go runtime, the Python package)
	// fills and checks. 8 covers what masks index in practice with room to
	// spare: [B, H, Q/D, k] block selections (MoBA, NSA) are 4-D, as are
	// FlexAttention's BlockMask index tensors [B, H, q blocks, kv blocks];
	// a per-head table of 2-D canvases is 5-D. Torch allows more (up to 64
	// dimensions) but no attention mask we know of reads one, and every
	// extent costs 8 bytes of kernel parameter per slot: MaskcBuffers is
	// 632 bytes at 8 x 8, far inside the 4 KiB that CUDA and HIP pass by
	// value. It equals MaxBuffers by choice, not by necessity.
	MaxBufferRank = 8
)

// The status words: StatusWords device words (unsigned int) that a launcher
// owns per kernel handle and device, zeroes once when it allocates them and
// passes as MaskcBuffers.status in every launch. Word 0 holds sticky bits a
// kernel ORs in (atomicOr; a kernel never clears one, the launcher does on
// request); word 1 + slot is rewritten by the segments check before each
// launch: 1 when the ids of segments buffer slot are non-decreasing along
// each row for that launch, else 0. A kernel reads status only when it is
// not nullptr, so a launcher that passes none stays correct.
const (
	// StatusWords is the number of status words: the sticky word and one
	// per buffer slot.
	StatusWords = 1 + MaxBuffers
	// StatusSegmentsUnsorted (word 0): a segments buffer's ids were not
	// non-decreasing along a row. The promise was broken; the result is
	// still the mask as written.
	StatusSegmentsUnsorted = 1
	// StatusReadOutOfRange (word 0): a buffer read whose index depends on
	// buffer values fell outside the buffer's extents; the read returned
	// the documented value.
	StatusReadOutOfRange = 2
)

// StatusBit is one sticky bit of status word 0, as the manifest and abi.h
// name it.
type StatusBit struct {
	// Name is the manifest's key and, upper-cased after MASKC_STATUS_, the
	// C macro.
	Name string `json:"name"`
	// Value is the bit.
	Value uint32 `json:"value"`
	// Doc says what it records.
	Doc string `json:"doc"`
}

// StatusBits are the sticky bits of status word 0.
var StatusBits = []StatusBit{
	{Name: "segments_unsorted", Value: StatusSegmentsUnsorted, Doc: "a segments buffer's ids were not non-decreasing along a row (the promise was broken; the result is still the mask as written)"},
	{Name: "read_out_of_range", Value: StatusReadOutOfRange, Doc: "a buffer read whose index depends on buffer values fell outside its extents (the read returned the documented value)"},
}

// StatusDesc is the "status" section of the manifest's abi.
type StatusDesc struct {
	// Words is StatusWords.
	Words int `json:"words"`
	// Bits are StatusBits.
	Bits []StatusBit `json:"bits"`
	// SlotWord says where a slot's sortedness is.
	SlotWord string `json:"slot_word"`
}

// Tile flag values written by maskc_tile_flags, one byte per tile.
const (
	// TileEmpty: every (q, kv) of the tile is masked out; the forward skips it.
	TileEmpty = 0
	// TilePartial: some are kept; the forward applies the mask.
	TilePartial = 1
	// TileFull: all are kept; the forward skips the mask.
	TileFull = 2
)

// Sparsity says how a generated kernel skips masked-out tiles; the string
// is the manifest's and the plan's spelling.
type Sparsity string

const (
	// SparsityAnalytic: closed-form maskc_kv_range and maskc_tile_full.
	SparsityAnalytic Sparsity = "analytic"
	// SparsityPrepass: maskc_tile_flags runs before every forward and
	// writes per-tile flags that the forward reads.
	SparsityPrepass Sparsity = "prepass"
	// SparsityNone: the mask is evaluated on every tile.
	SparsityNone Sparsity = "none"
)

// Field is one member of an ABI struct, with its LP64 layout.
type Field struct {
	// Name is the C member name.
	Name string `json:"name"`
	// CType is the element's C type: "int", "long long", "float" or a
	// pointer ("const float*", "const unsigned char*", "const void*").
	CType string `json:"c_type"`
	// Dims are the array extents (none for a scalar).
	Dims []int `json:"dims,omitempty"`
	// Offset is the byte offset in the struct.
	Offset int `json:"offset"`
	// Size is the member's size in bytes (all elements).
	Size int `json:"size"`
	// Doc is the comment beside the member in abi.h.
	Doc string `json:"doc,omitempty"`
}

// Struct is a C struct passed by value to the kernels, laid out as on every
// LP64 host and device maskc targets (x86-64, aarch64, amdgcn, nvptx64).
type Struct struct {
	// Name is the C struct name.
	Name string `json:"name"`
	// Doc is the comment above the struct in abi.h.
	Doc string `json:"doc,omitempty"`
	// Fields are the members in order.
	Fields []Field `json:"fields"`
	// Size and Align are sizeof and alignof.
	Size  int `json:"size"`
	Align int `json:"align"`
}

// scalarSize is the LP64 size (and alignment) of a scalar C type.
func scalarSize(ctype string) int {
	switch {
	case strings.HasSuffix(ctype, "*"), ctype == "long long":
		return 8
	case ctype == "int", ctype == "float":
		return 4
	case ctype == "unsigned char":
		return 1
	}
	panic("hipsrc: no layout for C type " + ctype)
}

// layout computes offsets, sizes and alignment.
func layout(name, doc string, fields ...Field) Struct {
	s := Struct{Name: name, Doc: doc, Align: 1}
	off := 0
	for _, f := range fields {
		sz := scalarSize(f.CType)
		off = (off + sz - 1) / sz * sz
		f.Offset = off
		f.Size = sz
		for _, d := range f.Dims {
			f.Size *= d
		}
		off += f.Size
		s.Align = max(s.Align, sz)
		s.Fields = append(s.Fields, f)
	}
	s.Size = (off + s.Align - 1) / s.Align * s.Align
	return s
}

// alignedTo returns s with alignment align (a power of two above its
// members' own, as C's alignas on the struct): its size rounded up to it.
func alignedTo(s Struct, align int) Struct {
	s.Align = max(s.Align, align)
	s.Size = (s.Size + s.Align - 1) / s.Align * s.Align
	return s
}

// Field returns the member called name, or false.
func (s Struct) Field(name string) (Field, bool) {
	for _, f := range s.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// ShapeStruct is struct MaskcShape: the sizes and strides of one launch.
var ShapeStruct = layout("MaskcShape", "Shapes and strides of one launch (the same value for both entry points).",
	Field{Name: "B", CType: "int", Doc: "batch"},
	Field{Name: "H", CType: "int", Doc: "query heads"},
	Field{Name: "HKV", CType: "int", Doc: "key/value heads; query head h reads kv head h / (H / HKV)"},
	Field{Name: "Sq", CType: "int", Doc: "query length"},
	Field{Name: "Skv", CType: "int", Doc: "key/value length"},
	Field{Name: "q_stride", CType: "long long", Dims: []int{3}, Doc: "elements, for (batch, head, seq)"},
	Field{Name: "k_stride", CType: "long long", Dims: []int{3}},
	Field{Name: "v_stride", CType: "long long", Dims: []int{3}},
	Field{Name: "o_stride", CType: "long long", Dims: []int{3}},
	Field{Name: "scale", CType: "float", Doc: "softmax scale applied to q.k (> 0)"},
	Field{Name: "sink", CType: "const float*", Doc: "nullptr or [H] fp32 sink logits"},
	Field{Name: "tile_flags", CType: "const unsigned char*", Doc: "nullptr unless SparsityPrepass: maskc_tile_flags's output"},
)

// BuffersStruct is struct MaskcBuffers: the captured tensors, by slot.
var BuffersStruct = layout("MaskcBuffers", "What the mask and score read: captured tensors by slot (declaration order of the buffers the\n"+
	"kernel reads): ptr[i] is the data (row-major, contiguous), dim[i] its extents (outermost first;\n"+
	"the extents past a buffer's rank are 1); and the position frame (hipsrc/frame.h): the launch computes the rows\n"+
	"q_offset .. q_offset+Sq-1 against the keys kv_offset .. kv_offset+Skv-1 and the heads\n"+
	"h_offset .. h_offset+H-1 of an attention of q_total x kv_total positions and h_total heads,\n"+
	"which is what the mask and score see (all zero: the launch is the whole attention).",
	Field{Name: "ptr", CType: "const void*", Dims: []int{MaxBuffers}},
	Field{Name: "dim", CType: "long long", Dims: []int{MaxBuffers, MaxBufferRank}},
	Field{Name: "q_offset", CType: "long long", Doc: "global position of local query row 0 (>= 0)"},
	Field{Name: "kv_offset", CType: "long long", Doc: "global position of local key 0 (>= 0)"},
	Field{Name: "h_offset", CType: "long long", Doc: "global index of local query head 0 (>= 0, a multiple of H / HKV)"},
	Field{Name: "q_total", CType: "long long", Doc: "global query length Q the mask sees; 0: q_offset + Sq"},
	Field{Name: "kv_total", CType: "long long", Doc: "global key length KV the mask sees; 0: kv_offset + Skv"},
	Field{Name: "h_total", CType: "long long", Doc: "global query heads H the mask sees (HKV scales alike); 0: h_offset + H"},
	Field{Name: "status", CType: "unsigned int*", Doc: "nullptr or MASKC_STATUS_WORDS launcher-owned words: [0] sticky MASKC_STATUS_* bits, [1 + slot] segments sorted (1) or not (0)"},
)

// FrameFields are the position-frame members of MaskcBuffers in order
// (hipsrc/frame.h reads them; every launcher fills them, zero for a
// launch that is the whole attention).
var FrameFields = []string{"q_offset", "kv_offset", "h_offset", "q_total", "kv_total", "h_total"}

// The copy engine's tensor maps that a launcher passes to a forward whose
// launch says tensor_maps (LaunchConfig.TensorMaps), and to a backward
// whose bwd_launch says them (BwdLaunchConfig.TensorMaps): CUtensorMap
// objects (cuda.h) of TensorMapBytes bytes at TensorMapAlign-byte
// alignment, encoded by cuTensorMapEncodeTiled as 4-D maps of Q, K and V
// (and the backward's dO; dimensions, innermost first: D, the sequence,
// heads, batches; the byte strides of MaskcShape's or MaskcBwdShape's seq,
// head and batch strides), read in boxes of TensorMapBoxCols columns x the
// rows the launch's TensorMapRows give (dO's: Q's),
// TensorMapSwizzleBytes-byte swizzle, no interleave, no L2 promotion, zero
// fill out of bounds.
const (
	TensorMapBytes        = 128
	TensorMapAlign        = 64
	TensorMapBoxCols      = 64
	TensorMapSwizzleBytes = 128
)

// TensorMapsStruct is struct MaskcTensorMaps, the last parameter of the
// forward and of maskc_attn_bwd (and maskc_attn_bwd_ordered): the maps of
// Q, K, V (and dO, the backward's) and whether the launcher encoded them.
var TensorMapsStruct = alignedTo(layout("MaskcTensorMaps", "The copy engine's maps of Q, K, V and dO for a launch that says tensor_maps (MANIFEST.md):\n"+
	"CUtensorMap objects encoded by the launcher, ok = 1; else all zero, and the kernel copies by cp.async.",
	Field{Name: "q", CType: "unsigned char", Dims: []int{TensorMapBytes}, Doc: "Q's 4-D map: D x Sq x H x B, boxes of 64 columns x tensor_maps.q_rows"},
	Field{Name: "k", CType: "unsigned char", Dims: []int{TensorMapBytes}, Doc: "K's: D x Skv x HKV x B, boxes of 64 columns x tensor_maps.kv_rows"},
	Field{Name: "v", CType: "unsigned char", Dims: []int{TensorMapBytes}, Doc: "V's, as K's"},
	Field{Name: "dout", CType: "unsigned char", Dims: []int{TensorMapBytes}, Doc: "the backward's dO, as Q's (strides do_stride); zero in the forward's"},
	Field{Name: "ok", CType: "int", Doc: "1: the launch's maps are encoded; 0: not (any other launch)"},
), TensorMapAlign)

// Structs are the ABI structs in declaration order.
var Structs = []Struct{ShapeStruct, BuffersStruct, TensorMapsStruct}

// BwdShapeStruct is struct MaskcBwdShape, the backward kernels' sizes,
// strides and auxiliary tensors (declared in attn_bwd.h, which the backward
// source appends after the forward; TestBwdShapeMatchesHeader checks the
// declaration against this one).
var BwdShapeStruct = layout("MaskcBwdShape", "Shapes, strides and auxiliary tensors of one backward launch (every backward entry point).",
	Field{Name: "B", CType: "int", Doc: "batch"},
	Field{Name: "H", CType: "int", Doc: "query heads"},
	Field{Name: "HKV", CType: "int", Doc: "key/value heads; query head h reads kv head h / (H / HKV)"},
	Field{Name: "Sq", CType: "int", Doc: "query length"},
	Field{Name: "Skv", CType: "int", Doc: "key/value length"},
	Field{Name: "q_stride", CType: "long long", Dims: []int{3}, Doc: "elements, for (batch, head, seq)"},
	Field{Name: "k_stride", CType: "long long", Dims: []int{3}},
	Field{Name: "v_stride", CType: "long long", Dims: []int{3}},
	Field{Name: "o_stride", CType: "long long", Dims: []int{3}},
	Field{Name: "do_stride", CType: "long long", Dims: []int{3}, Doc: "dO, the gradient of O"},
	Field{Name: "dq_stride", CType: "long long", Dims: []int{3}},
	Field{Name: "dk_stride", CType: "long long", Dims: []int{3}},
	Field{Name: "dv_stride", CType: "long long", Dims: []int{3}},
	Field{Name: "scale", CType: "float", Doc: "softmax scale applied to q.k, as in the forward"},
	Field{Name: "sink", CType: "const float*", Doc: "nullptr or [H] fp32 sink logits, as in the forward"},
	Field{Name: "tile_flags", CType: "const unsigned char*", Doc: "nullptr unless SparsityPrepass: maskc_tile_flags's output for this shape"},
	Field{Name: "lse", CType: "const float*", Doc: "[B, H, Sq] natural-log LSE of the forward"},
	Field{Name: "dlse", CType: "const float*", Doc: "nullptr or [B, H, Sq]: the gradient of the LSE"},
	Field{Name: "delta", CType: "float*", Doc: "[B, H, Sq] fp32 scratch: rowsum(dO * O) - dLSE"},
	Field{Name: "dq_acc", CType: "float*", Doc: "[B, H, Sq, D] fp32 scratch (atomic mode, and deterministic mode where bwd_launch.dq_ordered; opaque: each row's columns may be stored permuted, maskc_bwd_dq_chunk_col); nullptr: deterministic mode through maskc_attn_bwd_dq"},
	Field{Name: "dq_sem", CType: "unsigned int*", Doc: "nullptr, or in deterministic mode where bwd_launch.dq_ordered: [B, H, ceil(Sq / 16)] scratch (zeroed by maskc_attn_bwd_pre), the turns of dQ's ordered additions"},
	Field{Name: "dsink", CType: "float*", Doc: "nullptr or [H] fp32: the sink gradient"},
	Field{Name: "dbuf", CType: "long long*", Dims: []int{MaxBuffers}, Doc: "per buffer slot: zeroed int64 fixed-point gradient sums (BwdFixOne), or nullptr"},
)

// Backward entry point names (C linkage, attn_bwd.h), in launch order.
const (
	// BwdPreEntry computes delta = rowsum(dO * O) - dLSE and zeroes dq_acc.
	BwdPreEntry = "maskc_attn_bwd_pre"
	// BwdMainEntry computes dK, dV (and dQ's atomics and the buffer
	// gradients) per kv tile.
	BwdMainEntry = "maskc_attn_bwd"
	// BwdMainOrderedEntry is BwdMainEntry adding dQ in a fixed order
	// (deterministic mode where bwd_launch.dq_ordered, in its place).
	BwdMainOrderedEntry = "maskc_attn_bwd_ordered"
	// BwdDQEntry is the deterministic dQ kernel.
	BwdDQEntry = "maskc_attn_bwd_dq"
	// BwdDQConvertEntry converts dq_acc to dQ's element type (atomic mode).
	BwdDQConvertEntry = "maskc_attn_bwd_dq_convert"
	// BwdSinkEntry computes the sink gradient.
	BwdSinkEntry = "maskc_attn_bwd_sink"
	// BwdBufConvertEntry converts one buffer gradient's fixed-point sums.
	BwdBufConvertEntry = "maskc_attn_bwd_buf_convert"
)

// BwdEntries are the backward entry points in launch order; every launch
// uses the platform's bwd_threads per block. Their When: "always";
// "prepass" (maskc_tile_flags of the forward, from the same module, before
// maskc_attn_bwd); "unordered" (every backward but an ordered deterministic
// one) or "ordered" (deterministic mode where bwd_launch.dq_ordered;
// BwdLaunchConfig.Ordered); "deterministic" (dQ by maskc_attn_bwd_dq) or
// "atomic" (dQ converted from dq_acc; BwdLaunchConfig.DQByMain); "sink"
// (kernels with a sink, when its gradient is wanted); "grad" (once per
// differentiable buffer whose gradient is wanted, size n its element
// count).
var BwdEntries = []Entry{
	{
		Name: BwdPreEntry,
		Params: []Param{
			{Name: "O", CType: "const T*", Doc: "the forward's output, strides shape.o_stride"},
			{Name: "dO", CType: "const T*", Doc: "gradient of O, strides shape.do_stride"},
			{Name: "shape", CType: "MaskcBwdShape"},
		},
		Grid: [3]GridDim{{Size: "Sq", Tile: "bwd_pre_rows"}, {Size: "H"}, {Size: "B"}},
		When: "always",
	},
	bwdMainEntry(BwdMainEntry, "unordered"),
	bwdMainEntry(BwdMainOrderedEntry, "ordered"),
	{
		Name: BwdDQEntry,
		Params: []Param{
			{Name: "Q", CType: "const T*"}, {Name: "K", CType: "const T*"}, {Name: "V", CType: "const T*"},
			{Name: "dO", CType: "const T*"},
			{Name: "dQ", CType: "T*", Doc: "like Q, strides shape.dq_stride"},
			{Name: "shape", CType: "MaskcBwdShape"},
			{Name: "buf", CType: "MaskcBuffers"},
		},
		Grid:      [3]GridDim{{Size: "Sq", Tile: "bwd_block_m"}, {Size: "H"}, {Size: "B"}},
		SharedMem: true,
		When:      "deterministic",
	},
	{
		Name:   BwdDQConvertEntry,
		Params: []Param{{Name: "dQ", CType: "T*", Doc: "like Q, strides shape.dq_stride"}, {Name: "shape", CType: "MaskcBwdShape"}},
		Grid:   [3]GridDim{{Size: "Sq", Tile: "bwd_pre_rows"}, {Size: "H"}, {Size: "B"}},
		When:   "atomic",
	},
	{
		Name:   BwdSinkEntry,
		Params: []Param{{Name: "shape", CType: "MaskcBwdShape"}},
		Grid:   [3]GridDim{{Size: "H"}, {Size: "1"}, {Size: "1"}},
		When:   "sink",
	},
	{
		Name: BwdBufConvertEntry,
		Params: []Param{
			{Name: "acc", CType: "const long long*", Doc: "the slot's shape.dbuf sums"},
			{Name: "out", CType: "float*", Doc: "the buffer's gradient, fp32, the buffer's extents"},
			{Name: "n", CType: "long long", Doc: "the buffer's element count"},
		},
		Grid: [3]GridDim{{Size: "n", Tile: "bwd_threads"}, {Size: "1"}, {Size: "1"}},
		When: "grad",
	},
}

// bwdMainEntry is maskc_attn_bwd's entry point, or maskc_attn_bwd_ordered's
// (the same launch), run when when says.
func bwdMainEntry(name, when string) Entry {
	return Entry{
		Name: name,
		Params: []Param{
			{Name: "Q", CType: "const T*"}, {Name: "K", CType: "const T*"}, {Name: "V", CType: "const T*"},
			{Name: "dO", CType: "const T*"},
			{Name: "dK", CType: "T*", Doc: "like K, strides shape.dk_stride"},
			{Name: "dV", CType: "T*", Doc: "like V, strides shape.dv_stride"},
			{Name: "shape", CType: "MaskcBwdShape"},
			{Name: "buf", CType: "MaskcBuffers"},
			{Name: "maps", CType: "MaskcTensorMaps", Doc: "encoded where the bwd_launch says tensor_maps, else zero"},
		},
		Grid:      [3]GridDim{{Size: "Skv", Tile: "bwd_block_n"}, {Size: "HKV"}, {Size: "B"}},
		SharedMem: true,
		When:      when,
	}
}

// BwdEntryNames returns the names of BwdEntries in launch order that a
// kernel without the ordered dQ has (all but BwdMainOrderedEntry).
func BwdEntryNames() []string { return BwdEntryNamesFor(false) }

// BwdEntryNamesFor returns the names of BwdEntries in launch order that a
// kernel has: BwdMainOrderedEntry only where its source asks for the
// ordered dQ (BwdDQOrderDefine; every platform's module defines it then).
func BwdEntryNamesFor(ordered bool) []string {
	var out []string
	for _, e := range BwdEntries {
		if e.Name != BwdMainOrderedEntry || ordered {
			out = append(out, e.Name)
		}
	}
	return out
}

// EntryNamed returns the entry point called name, forward (Entries) or
// backward (BwdEntries).
func EntryNamed(name string) (Entry, bool) {
	for _, es := range [][]Entry{Entries, BwdEntries} {
		for _, e := range es {
			if e.Name == name {
				return e, true
			}
		}
	}
	return Entry{}, false
}

// BwdEntry returns the backward entry point called name.
func BwdEntry(name string) (Entry, bool) {
	for _, e := range BwdEntries {
		if e.Name == name {
			return e, true
		}
	}
	return Entry{}, false
}

// CDecl returns the C declaration of s.
func (s Struct) CDecl() string {
	var b strings.Builder
	for _, l := range strings.Split(s.Doc, "\n") {
		b.WriteString("// " + l + "\n")
	}
	natural := 1
	for _, f := range s.Fields {
		natural = max(natural, scalarSize(f.CType))
	}
	if s.Align > natural { // alignedTo's
		fmt.Fprintf(&b, "struct alignas(%d) %s {\n", s.Align, s.Name)
	} else {
		fmt.Fprintf(&b, "struct %s {\n", s.Name)
	}
	for _, f := range s.Fields {
		decl := f.CType + " " + f.Name
		for _, d := range f.Dims {
			decl += fmt.Sprintf("[%d]", d)
		}
		decl += ";"
		if f.Doc != "" {
			decl = fmt.Sprintf("%-36s // %s", decl, f.Doc)
		}
		b.WriteString("  " + decl + "\n")
	}
	b.WriteString("};\n")
	return b.String()
}

// Param is one parameter of an entry point.
type Param struct {
	// Name is the parameter name.
	Name string `json:"name"`
	// CType is its C type; "T" is the kernel's element type (the 16-bit
	// storage of its dtype), passed as a device pointer.
	CType string `json:"c_type"`
	// Doc says what it holds.
	Doc string `json:"doc,omitempty"`
}

// GridDim is one dimension of a launch grid: ceil(Size / Tile), where Size
// is one of the launch sizes "B", "H", "HKV", "Sq", "Skv", "n" (a buffer's
// element count) or "1" and Tile is "block_m", "block_n" (the platform's
// key tile), "bwd_block_m", "bwd_block_n", "bwd_pre_rows", "bwd_threads"
// (the platform's backward tiles) or "" (1).
type GridDim struct {
	// Size is the launch size divided.
	Size string `json:"size"`
	// Tile is the divisor, empty for 1.
	Tile string `json:"tile,omitempty"`
}

// Entry is one kernel entry point and how it is launched.
type Entry struct {
	// Name is the C symbol.
	Name string `json:"name"`
	// Params are the kernel parameters in order.
	Params []Param `json:"params"`
	// Grid is the launch grid (x, y, z).
	Grid [3]GridDim `json:"grid"`
	// SharedMem says whether the launch takes the kernel's dynamic shared
	// memory (the platform's shared_mem_bytes) or none.
	SharedMem bool `json:"shared_mem"`
	// When says when it is launched: "always", "prepass" (only kernels
	// of sparsity prepass, before the forward, on the same stream) or
	// "segments" (only kernels whose manifest names it as
	// seg_check_entry, first, before every forward and every backward, on
	// the same stream) or "decode" (the split-KV decode kernel, for query
	// blocks of at most DecodeMaxSq rows (maskc.decode), instead of the
	// forward; the merge after it when n_split > 1; DecodeThreads threads).
	When string `json:"when"`
}

// Entries are the entry points; every launch uses the platform's threads
// per block (one dimension).
var Entries = []Entry{
	{
		Name: AttentionEntry,
		Params: []Param{
			{Name: "Q", CType: "const T*", Doc: "[B, Sq, H, D] (bshd) or [B, H, Sq, D] (bhsd), strides in shape"},
			{Name: "K", CType: "const T*", Doc: "like Q with HKV heads and Skv positions"},
			{Name: "V", CType: "const T*", Doc: "like K"},
			{Name: "O", CType: "T*", Doc: "like Q"},
			{Name: "LSE", CType: "float*", Doc: "[B, H, Sq] natural-log logsumexp, contiguous"},
			{Name: "shape", CType: "MaskcShape"},
			{Name: "buf", CType: "MaskcBuffers"},
			{Name: "maps", CType: "MaskcTensorMaps", Doc: "encoded where the launch says tensor_maps, else zero"},
		},
		Grid:      [3]GridDim{{Size: "Sq", Tile: "block_m"}, {Size: "H"}, {Size: "B"}},
		SharedMem: true,
		When:      "always",
	},
	{
		Name: TileFlagsEntry,
		Params: []Param{
			{Name: "shape", CType: "MaskcShape"},
			{Name: "buf", CType: "MaskcBuffers"},
			{Name: "flags", CType: "unsigned char*", Doc: "tile flags, the buffer shape.tile_flags points at"},
		},
		Grid:      [3]GridDim{{Size: "Skv", Tile: "block_n"}, {Size: "Sq", Tile: "block_m"}, {Size: "1"}},
		SharedMem: false,
		When:      "prepass",
	},
	{
		Name: SegCheckEntry,
		Params: []Param{
			{Name: "buf", CType: "MaskcBuffers", Doc: "the launch's buffers and status words (the same value as the forward's or backward's)"},
		},
		Grid:      [3]GridDim{{Size: "1"}, {Size: "1"}, {Size: "1"}},
		SharedMem: false,
		When:      "segments",
	},
	{Name: DecodeEntry, Params: decodeParams(true), Grid: [3]GridDim{{Size: "n"}, {Size: "HKV"}, {Size: "B"}}, When: "decode"},
	{Name: DecodeMergeEntry, Params: decodeParams(false), Grid: [3]GridDim{{Size: "Sq"}, {Size: "H"}, {Size: "B"}}, When: "decode"},
}

// decodeParams returns the parameters of maskc_attn_decode (all the
// forward's, then the workspace) or of maskc_attn_decode_merge (O, LSE,
// shape, then the workspace).
func decodeParams(split bool) []Param {
	ps := []Param{{Name: "O", CType: "T*"}, {Name: "LSE", CType: "float*"}, {Name: "shape", CType: "MaskcShape"}}
	if split {
		ps = []Param{{Name: "Q", CType: "const T*"}, {Name: "K", CType: "const T*"}, {Name: "V", CType: "const T*"},
			ps[0], ps[1], ps[2], {Name: "buf", CType: "MaskcBuffers"}}
	}
	return append(ps, Param{Name: "ws_o", CType: "float*", Doc: "workspace [B, H, Sq, n_split, D] fp32: each split's normalised O"},
		Param{Name: "ws_lse", CType: "float*", Doc: "workspace [B, H, Sq, n_split] fp32: each split's base-2 LSE"},
		Param{Name: "n_split", CType: "int", Doc: "key splits per row block (n = n_split * ceil(Sq * H/HKV / DecodeRows))"})
}

// LaunchSizes are the sizes a grid rule reads.
type LaunchSizes struct {
	// B, H, HKV, Sq and Skv are batch, query heads, key/value heads, query
	// and key/value length; N is a buffer's element count.
	B, H, HKV, Sq, Skv, N int
}

// Eval returns the grid of e for sizes, on a platform whose key tile is
// blockN keys (forward entries; EvalOn knows every tile).
func (e Entry) Eval(sz LaunchSizes, blockN int) [3]int {
	return e.EvalWith(sz, map[string]int{"block_m": BlockM, "block_n": blockN})
}

// EvalOn returns the grid of e for sizes on platform p at a head dim.
func (e Entry) EvalOn(sz LaunchSizes, p Platform, headDim int) ([3]int, error) {
	tiles, err := p.Tiles(headDim)
	if err != nil {
		return [3]int{}, err
	}
	return e.EvalWith(sz, tiles), nil
}

// Tiles returns the value of every grid tile name (GridDim.Tile) on p at a
// head dim.
func (p Platform) Tiles(headDim int) (map[string]int, error) {
	t, err := p.BwdTileFor(headDim)
	if err != nil {
		return nil, err
	}
	return map[string]int{
		"block_m": BlockM, "block_n": p.BlockN(), "bwd_block_m": t.BlockM, "bwd_block_n": t.BlockN,
		"bwd_pre_rows": p.BwdPreRows(), "bwd_threads": p.BwdThreads(),
	}, nil
}

// EvalWith returns the grid of e for sizes with the given tile values
// (Tiles); a tile missing from tiles panics.
func (e Entry) EvalWith(sz LaunchSizes, tiles map[string]int) [3]int {
	var g [3]int
	for i, d := range e.Grid {
		n := 1
		switch d.Size {
		case "B":
			n = sz.B
		case "H":
			n = sz.H
		case "HKV":
			n = sz.HKV
		case "Sq":
			n = sz.Sq
		case "Skv":
			n = sz.Skv
		case "n":
			n = sz.N
		}
		if d.Tile != "" {
			t, ok := tiles[d.Tile]
			if !ok {
				panic("hipsrc: grid tile " + d.Tile + " unknown here")
			}
			n = ceilDiv(n, t)
		}
		g[i] = n
	}
	return g
}

// TileFlagLayout documents the tile-flag buffer of prepass kernels.
type TileFlagLayout struct {
	// Empty, Partial and Full are the flag values.
	Empty   int `json:"empty"`
	Partial int `json:"partial"`
	Full    int `json:"full"`
	// Index is where the flag of (b, h, q tile, kv tile) is.
	Index string `json:"index"`
	// Bytes is the buffer's size.
	Bytes string `json:"bytes"`
	// Where says what b', h', FB and FH are.
	Where string `json:"where"`
}

// TileFlags is the tile-flag layout.
var TileFlags = TileFlagLayout{
	Empty: TileEmpty, Partial: TilePartial, Full: TileFull,
	Index: "((b' * FH + h') * QTiles + q_tile) * KVTiles + kv_tile",
	Bytes: "FB * FH * QTiles * KVTiles",
	Where: "QTiles = ceil(Sq / block_m), KVTiles = ceil(Skv / block_n); b' = b and FB = B if mask_uses_b, else 0 and 1; h' = h and FH = H if mask_uses_h, else 0 and 1",
}

// PlatformABI is what the manifest says about one platform.
type PlatformABI struct {
	// Name is Platform.String().
	Name string `json:"name"`
	// Backend is "cuda" or "hip".
	Backend string `json:"backend"`
	// Arch is the architecture to compile for when it is not the device's
	// own (e.g. "sm_90a"), else empty.
	Arch string `json:"arch,omitempty"`
	// CompileOptions are the extra compiler options that select the
	// platform's kernel in the prelude.
	CompileOptions []string `json:"compile_options,omitempty"`
	// Selects says which devices get this platform (ForDevice).
	Selects string `json:"selects"`
	// WarpSize, Threads and BlockN are MASKC_WARP_SIZE, MASKC_NUM_THREADS
	// (at head dims up to 128; each kernel's launch gives its own) and
	// MASKC_BLOCK_N.
	WarpSize int `json:"warp_size"`
	Threads  int `json:"threads"`
	BlockN   int `json:"block_n"`
	// BwdThreads is the block size of every backward kernel
	// (MASKC_BWD_THREADS), BwdPreRows the rows per block of its row passes
	// (MASKC_BWD_PRE_ROWS).
	BwdThreads int `json:"bwd_threads"`
	BwdPreRows int `json:"bwd_pre_rows"`
}

// ABI returns the platform's ABI description.
func (p Platform) ABI() PlatformABI {
	a := PlatformABI{Name: p.String(), Backend: "cuda", WarpSize: p.WarpSize(), Threads: p.NumThreads(), BlockN: p.BlockN(),
		BwdThreads: p.BwdThreads(), BwdPreRows: p.BwdPreRows()}
	switch p {
	case AMD:
		a.Backend, a.Selects = "hip", "every AMD GPU (gfx90a, gfx94x, gfx950)"
	case NVIDIAWGMMA:
		a.Arch, a.CompileOptions, a.Selects = WGMMAArch, WGMMAOptions, "NVIDIA sm_90 (Hopper)"
	default:
		a.Selects = "NVIDIA GPUs other than sm_90"
	}
	return a
}

// ABIDesc is the "abi" section of manifest.json.
type ABIDesc struct {
	// Version is ABIVersion (MASKC_ABI_VERSION in every kernel source).
	Version int `json:"version"`
	// Structs are the argument structs with their layouts.
	Structs []Struct `json:"structs"`
	// Entries are the entry points and their grid rules.
	Entries []Entry `json:"entries"`
	// BlockM is the query rows per block on every platform.
	BlockM int `json:"block_m"`
	// MaxSeqLen is the longest Sq and Skv a launcher may pass.
	MaxSeqLen int `json:"max_seq_len"`
	// MaxBuffers and MaxBufferRank bound MaskcBuffers.
	MaxBuffers    int `json:"max_buffers"`
	MaxBufferRank int `json:"max_buffer_rank"`
	// TileFlags is the pre-pass flag buffer's layout.
	TileFlags TileFlagLayout `json:"tile_flags"`
	// Platforms are the kernel variants by platform.
	Platforms []PlatformABI `json:"platforms"`
	// BwdStructs are the backward's own argument structs (MaskcBwdShape;
	// it also takes MaskcBuffers), BwdEntries its entry points in launch
	// order and BwdFixOne the scale of its fixed-point buffer-gradient
	// sums. Its tiles depend on the platform and head dim: each kernel's
	// bwd_launch gives them.
	BwdStructs []Struct `json:"bwd_structs"`
	BwdEntries []Entry  `json:"bwd_entries"`
	BwdFixOne  int64    `json:"bwd_fix_one"`
	// Status describes the status words MaskcBuffers.status points at.
	Status StatusDesc `json:"status"`
	// TensorMaps says how a launcher encodes MaskcTensorMaps.
	TensorMaps TensorMapDesc `json:"tensor_maps"`
}

// TensorMapDesc is the "tensor_maps" section of the manifest's abi: how a
// launcher encodes the maps of MaskcTensorMaps (TensorMapBytes and the
// constants beside it) for a launch that says tensor_maps (the forward's
// LaunchConfig.TensorMaps, the backward's BwdLaunchConfig.TensorMaps).
type TensorMapDesc struct {
	// BoxCols is the columns of a box (TensorMapBoxCols).
	BoxCols int `json:"box_cols"`
	// SwizzleBytes is the shared-memory swizzle (TensorMapSwizzleBytes).
	SwizzleBytes int `json:"swizzle_bytes"`
}

// Describe returns the ABI description written into manifests.
func Describe() ABIDesc {
	d := ABIDesc{Version: ABIVersion, Structs: Structs, Entries: Entries, BlockM: BlockM, MaxSeqLen: MaxSeqLen, MaxBuffers: MaxBuffers, MaxBufferRank: MaxBufferRank, TileFlags: TileFlags,
		BwdStructs: []Struct{BwdShapeStruct}, BwdEntries: BwdEntries, BwdFixOne: BwdFixOne,
		Status:     StatusDesc{Words: StatusWords, Bits: StatusBits, SlotWord: "1 + slot: 1 when segments buffer slot's ids are non-decreasing along each row for this launch, else 0 (written before each launch by the segments check)"},
		TensorMaps: TensorMapDesc{BoxCols: TensorMapBoxCols, SwizzleBytes: TensorMapSwizzleBytes}}
	for _, p := range Platforms {
		d.Platforms = append(d.Platforms, p.ABI())
	}
	return d
}

// ABIHeader is the C text of abi.h: the ABI structs, generated from
// Structs. Every kernel source contains it once, after the prelude.
func ABIHeader() string {
	var b strings.Builder
	b.WriteString("// Code generated from hipsrc/abi.go by `go generate ./hipsrc`; DO NOT EDIT.\n")
	b.WriteString("// The kernel ABI structs (hipsrc/MANIFEST.md documents them and their layout).\n")
	b.WriteString("#ifndef MASKC_ABI_H\n#define MASKC_ABI_H\n")
	fmt.Fprintf(&b, "#define MASKC_ABI_VERSION %d\n#define MASKC_MAX_BUFFERS %d\n#define MASKC_MAX_BUFFER_RANK %d\n", ABIVersion, MaxBuffers, MaxBufferRank)
	b.WriteString("// The status words MaskcBuffers.status points at: [0] sticky bits, [1 + slot] segments sorted.\n")
	b.WriteString("#define MASKC_STATUS_WORDS (1 + MASKC_MAX_BUFFERS)\n")
	for _, sb := range StatusBits {
		fmt.Fprintf(&b, "#define MASKC_STATUS_%s %du  // %s\n", strings.ToUpper(sb.Name), sb.Value, sb.Doc)
	}
	for _, s := range Structs {
		b.WriteString("\n" + s.CDecl())
	}
	b.WriteString("\n#endif  // MASKC_ABI_H\n")
	return b.String()
}

// Layout is the dimension order of Q, K, V and O that a kernel is built
// for (the launcher passes the strides in MaskcShape); the string is the
// manifest's and the plan's spelling.
type Layout string

const (
	// LayoutBSHD is [batch, seq, head, dim].
	LayoutBSHD Layout = "bshd"
	// LayoutBHSD is [batch, head, seq, dim].
	LayoutBHSD Layout = "bhsd"
)
