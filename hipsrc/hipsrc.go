// Package hipsrc holds the hand-written GPU sources of maskc's generated
// attention kernels, embedded as text, and the kernel ABI (abi.go): the
// argument structs, buffer slots, tile-flag layout and launch geometry that
// every launcher reads, and the manifest that carries them (MANIFEST.md).
//
// A generated kernel is one self-contained source text (NVRTC and hiprtc
// cannot read include files); Assemble joins, in this order:
//
//  0. The generated part's `#define MASKC_HEAD_DIM`, on which the prelude's
//     block shape depends.
//  1. Prelude (prelude.h): platform detection, block shape, shuffles,
//     copies, element conversions, the shared-memory tile layout.
//  2. One file per matrix-core back end, each compiled in only on its
//     platform: MMASync (mma_sync.h, NVIDIA mma.sync and the m16n8
//     fragment layout), MMAWGMMA (mma_wgmma.h, sm_90a warpgroup MMA, with
//     WGMMAOptions), MMAMFMA (mma_mfma.h, AMD MFMA).
//  3. ABIHeader (abi.h): struct MaskcShape and struct MaskcBuffers,
//     generated from abi.go.
//  4. Runtime (runtime.h): helpers with Python's semantics for the
//     generated mask and score functions.
//  5. The generated part (package codegen): configuration #defines
//     (MASKC_HEAD_DIM, MASKC_DTYPE_BF16 or MASKC_DTYPE_F16, MASKC_HAS_MASK,
//     MASKC_HAS_SCORE, MASKC_HAS_SINK, MASKC_SPARSITY_ANALYTIC, _PREPASS or
//     _NONE, MASKC_MASK_USES_B / MASKC_MASK_USES_H, MASKC_SPLIT_MODS) and the
//     device functions maskc_g_mask, maskc_g_score (with their row and
//     column parts), maskc_g_score_grad, maskc_g_kv_range,
//     maskc_g_kv_intervals, maskc_g_q_range, maskc_g_q_intervals and
//     maskc_g_tile_full, in the global frame.
//  6. Frame (frame.h): the mask, score and sparsity functions in the
//     launch's local indices, each evaluating the generated part's global
//     one (maskc_g_mask, ...) through MaskcBuffers' position frame (a
//     context-parallel slice of a larger attention).
//  7. TileWalk (tile_walk.h): the key tiles a q tile visits (from the
//     generated maskc_kv_intervals), the q tiles a key tile's column walk
//     visits, and the order of the q tiles.
//  8. AttnFwd (attn_fwd.h): the fused flash-attention forward, entry points
//     maskc_attn_fwd and maskc_tile_flags with C linkage; then AttnFwdSM90
//     (attn_fwd_sm90.h), the warp-specialized Hopper forward that replaces
//     AttnFwd's maskc_attn_fwd when compiled with WSOptions.
//  9. AttnDecode (attn_decode.h): the split-KV decode kernel for short
//     query blocks (maskc_attn_decode, maskc_attn_decode_merge), from the
//     same generated part.
//  10. For the backward source only, the backward's tiles for the head dim
//     (BwdTileDefines) and AttnBwd: the backward kernels
//     (maskc_attn_bwd_pre, maskc_attn_bwd, maskc_attn_bwd_dq, ...).
//
// The constants below mirror the #defines of AttnFwd and the prelude; a
// test keeps them equal. Launchers use them for grids, blocks and shared
// memory.
package hipsrc

//go:generate go run ./internal/genabi

import (
	_ "embed"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Prelude is the common platform prelude (hipsrc/prelude.h).
//
//go:embed prelude.h
var Prelude string

// MMASync is the NVIDIA mma.sync back end (hipsrc/mma_sync.h).
//
//go:embed mma_sync.h
var MMASync string

// MMAWGMMA is the NVIDIA sm_90a wgmma back end (hipsrc/mma_wgmma.h).
//
//go:embed mma_wgmma.h
var MMAWGMMA string

// MMAMFMA is the AMD MFMA back end (hipsrc/mma_mfma.h).
//
//go:embed mma_mfma.h
var MMAMFMA string

// Runtime is the Python-semantics helper section every generated part
// uses (hipsrc/runtime.h; formerly codegen/runtime.h). It needs no header
// but ABIHeader.
//
//go:embed runtime.h
var Runtime string

// Frame is the position frame (hipsrc/frame.h): maskc_mask, maskc_score,
// maskc_kv_range, ... in a launch's local indices, from the generated
// part's maskc_g_ functions and MaskcBuffers' frame members.
//
//go:embed frame.h
var Frame string

// TileWalk is the forward's tile iteration and q-tile order
// (hipsrc/tile_walk.h): the key-tile intervals a q tile visits, from the
// generated maskc_kv_intervals, and the block-to-q-tile schedule.
//
//go:embed tile_walk.h
var TileWalk string

// AttnFwd is the fused attention forward template (hipsrc/attn_fwd.h).
//
//go:embed attn_fwd.h
var AttnFwd string

// AttnFwdSM90 is the warp-specialized sm_90a forward (hipsrc/attn_fwd_sm90.h),
// compiled after AttnFwd; it is empty unless the source is compiled for
// NVIDIAWGMMA with WSOptions, and then replaces AttnFwd's maskc_attn_fwd.
//
//go:embed attn_fwd_sm90.h
var AttnFwdSM90 string

// AttnDecode is the split-KV decode kernel (hipsrc/attn_decode.h), compiled
// after AttnFwdSM90 in every source.
//
//go:embed attn_decode.h
var AttnDecode string

// Launch shape of the decode kernels (attn_decode.h's MASKC_DEC_WARPS,
// MASKC_DEC_ROWS, MASKC_DEC_MAX_SQ).
const (
	// DecodeWarps is the warps per block of both decode entry points.
	DecodeWarps = 4
	// DecodeRows is the query rows (of the Sq * H/HKV rows of one kv head)
	// one maskc_attn_decode block computes.
	DecodeRows = 8
	// DecodeMaxSq is the longest query block the decode kernel is for.
	DecodeMaxSq = 16
)

// DecodeThreads returns the block size of the decode entry points on p.
func (p Platform) DecodeThreads() int { return DecodeWarps * p.WarpSize() }

// headDimDefine is the generated part's head dim.
var headDimDefine = regexp.MustCompile(`(?m)^#define MASKC_HEAD_DIM \d+\n`)

// Assemble returns the full self-contained source of a kernel whose
// generated part is generated; more (AttnBwd for the backward source)
// follow AttnFwd. The generated part's `#define MASKC_HEAD_DIM` is also the
// source's first line: the prelude's block shape depends on the head dim.
func Assemble(generated string, more ...string) string {
	var b strings.Builder
	b.WriteString(headDimDefine.FindString(generated))
	for _, p := range append([]string{Prelude, MMASync, MMAWGMMA, MMAMFMA, ABIHeader(), Runtime, generated, Frame, TileWalk, AttnFwd, AttnFwdSM90, AttnDecode}, more...) {
		b.WriteString(p)
		if !strings.HasSuffix(p, "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// AttnBwd is the attention backward templates (hipsrc/attn_bwd.h), compiled
// after AttnFwd in the same source.
//
//go:embed attn_bwd.h
var AttnBwd string

// Launch shape of the backward kernels (attn_bwd.h) on every platform and
// head dim; the tiles depend on both (BwdTileFor).
const (
	// BwdWarps is MASKC_BWD_WARPS, warps per block of every backward kernel.
	BwdWarps = 4
	// BwdPreLanes is the lanes per row of the row passes
	// (maskc_attn_bwd_pre, maskc_attn_bwd_dq_convert): MASKC_BWD_PRE_ROWS
	// rows per block is BwdThreads / BwdPreLanes.
	BwdPreLanes = 16
	// BwdFixOne is MASKC_BWD_FIX_ONE: buffer gradients are summed as
	// round(x * BwdFixOne) in 64-bit integers.
	BwdFixOne = 1 << 32
)

// BwdTile is the tile shape of maskc_attn_bwd and maskc_attn_bwd_dq on one
// platform at one head dim: maskc_attn_bwd takes BlockN keys per program and
// BlockM query rows per step, maskc_attn_bwd_dq BlockM rows per program and
// BlockN / Groups keys per step.
type BwdTile struct {
	// BlockM is MASKC_BWD_BLOCK_M, BlockN MASKC_BWD_BLOCK_N.
	BlockM, BlockN int
	// ARegs is MASKC_BWD_AREGS: the operands that only a warp's own rows
	// read (V in maskc_attn_bwd; Q and dO in maskc_attn_bwd_dq) are kept in
	// registers rather than in shared memory, whose V tile is then left out.
	ARegs bool
	// Groups is MASKC_BWD_GROUPS: maskc_attn_bwd's block is Groups groups of
	// BwdWarps warps, each taking BlockN / Groups of the program's keys (the
	// sm_90a warpgroup kernel's split of the key tile; 1 elsewhere), or with
	// SplitD all BlockN keys and D / Groups columns of dK and dV. Every
	// other backward kernel is one group.
	Groups int
	// SplitD is MASKC_BWD_SPLIT_D: the groups of maskc_attn_bwd split the
	// head dim of dK and dV (and the query rows of S^T and dP^T) instead of
	// the keys, and pass P^T through shared memory, whose P^T tile
	// [BlockN][BlockM] SharedMemBytes then counts (sm_90a at head dim 256,
	// where one warpgroup cannot hold dK and dV of 64 keys; FlashAttention-3's
	// split at that head dim).
	SplitD bool
	// Producer is MASKC_BWD_WS: maskc_attn_bwd is the warp-specialized
	// sm_90a kernel (attn_bwd.h), whose block has a producer warpgroup
	// beside the Groups consumer groups (MainThreads counts it) and whose
	// shared memory holds two Q, dO stages and two dS^T buffers
	// (SharedMemBytes); the other backward kernels are as without it.
	Producer bool
	// PairQTiles is MASKC_BWD_WS_PAIR: a step of the warp-specialized
	// kernel takes two q tiles of BlockM rows where the walk gives two in a
	// row (StepRows), its stages and dS^T buffers twice as tall; BlockM
	// stays every other kernel's and the q tiles' unit.
	PairQTiles bool
}

// StepRows returns the query rows of one step of maskc_attn_bwd:
// BlockM, or two q tiles' with PairQTiles.
func (t BwdTile) StepRows() int {
	if t.PairQTiles {
		return 2 * t.BlockM
	}
	return t.BlockM
}

// bwdTiles is the one table of backward tiles, by platform and head dim,
// chosen so that shared memory (LDS) and registers fit: 64 KiB of LDS on
// gfx90a and gfx942 (the AMD kernels run on gfx950's 160 KiB as well), 99
// KiB of shared memory on the smallest NVIDIA parts of the mma.sync
// platform (sm_86, sm_89), 227 KiB on the H200. Four warps each own 16
// keys of S^T and of dK, dV (16 query rows of dQ) in the mma.sync and MFMA
// kernels; where the tile has fewer
// 16-key (16-row) blocks than warps, the warps of one block split its
// columns (attn_bwd.h; on the H200 at head dim 256 these column-split
// tiles passed the float64 gradient check in gpu/NOTES.md run 19, after
// run 18 had caught maskc_smem_index's swizzle leaving 32-wide rows). The
// sm_90a warpgroup-MMA backward takes 64 x 64 tiles at head dims 64 and
// 128 (two blocks per SM); at 256 two warpgroups share a 64 x 64 tile,
// each with half of dK's and dV's columns (SplitD, one block per SM: 217
// KiB of shared memory with the dQ rows' staging).
var bwdTiles = map[Platform]map[int]BwdTile{
	NVIDIA:      {64: {64, 64, false, 1, false, false, false}, 128: {64, 64, false, 1, false, false, false}, 256: {32, 32, false, 1, false, false, false}},
	NVIDIAWGMMA: {64: {64, 64, false, 1, false, false, false}, 128: {64, 64, false, 1, false, false, false}, 256: {64, 64, false, 2, true, false, false}},
	AMD:         {64: {64, 64, false, 1, false, false, false}, 128: {32, 64, false, 1, false, false, false}, 256: {32, 32, true, 1, false, false, false}},
}

// bwdWSTiles are the tiles of the warp-specialized backward (BwdTile.Producer,
// BwdChoice.WarpSpecialized), where a platform has it: on sm_90a at head dim
// 128, two consumer warpgroups of 64 keys each share the 64-row Q and dO
// tiles of a 128-key program, which a producer warp copies, and a writer
// warp adds their dQ (FlashAttention-3's backward; K, V, two Q and dO
// stages and two dS^T buffers: 160 KiB of dynamic shared memory, 32 KiB of
// static dQ staging, one block per SM). On the H100 (gpu/NOTES.md runs 38c,
// 39c) forward + backward of full attention ran 1.20x as fast as on the
// same 128-key tile without the producer (the wide tile it replaced),
// causal 1.09x as fast as on the 64 x 64 tiles; with the element loops
// per tile class (run 40c) prefixes 1.25x, masks with short columns (a
// 1024-key window, documents, dilated windows) as fast in the atomic mode
// and slower in the deterministic one, so they keep the 64 x 64 tiles and
// their two blocks per SM. At head dim 64 causal ran 0.92-0.98x, with one
// consumer group computing all of dQ (run 38b) or each group half of its
// sum (run 39d). codegen takes it for kernels without a mask or with open
// columns (codegen.bwdChoice), every kernel under codegen.Options.BwdWS.
var bwdWSTiles = map[Platform]map[int]BwdTile{
	NVIDIAWGMMA: {128: {64, 128, false, 2, false, true, false}},
}

// bwdWSPairTiles are the warp-specialized backward's tiles on two-tile
// steps (BwdChoice.PairQTiles): at head dim 64, FlashAttention-3's 128 x
// 128 tile, each consumer group's S^T and dP^T m64n128 products over 128
// query rows and its dQ 64 rows of all 64 columns (the registers of the
// head-dim-128 tile: S^T, dP^T 64 each, dK, dV 32 each), 160 KiB of
// dynamic shared memory and 32 KiB of dQ staging. On the H100
// (gpu/NOTES.md run 51b) full attention's forward + backward ran 1.20x as
// fast as on the 64 x 64 tiles, causal 1.11x; codegen.pairSteps says which
// kernels take it.
var bwdWSPairTiles = map[Platform]map[int]BwdTile{
	NVIDIAWGMMA: {64: {64, 128, false, 2, false, true, true}},
}

// BwdChoice is what a kernel asks of the backward's tiles; a platform without
// such a tile at the head dim gives its plain one (BwdTileOf).
type BwdChoice struct {
	// WarpSpecialized asks for the warp-specialized kernel's tile
	// (bwdWSTiles).
	WarpSpecialized bool
	// PairQTiles, with WarpSpecialized, asks for its two-tile steps
	// (bwdWSPairTiles) where a platform has them at the head dim.
	PairQTiles bool
}

// BwdTileFor returns the backward tile on p at a head dim (HeadDims).
func (p Platform) BwdTileFor(headDim int) (BwdTile, error) { return p.BwdTileOf(headDim, BwdChoice{}) }

// BwdTileOf returns the backward tile on p at a head dim (HeadDims): the
// warp-specialized one (bwdWSTiles) where c asks for it and the platform has
// one, else BwdTileFor's.
func (p Platform) BwdTileOf(headDim int, c BwdChoice) (BwdTile, error) {
	if t, ok := bwdWSPairTiles[p][headDim]; ok && c.WarpSpecialized && c.PairQTiles {
		return t, nil
	}
	if t, ok := bwdWSTiles[p][headDim]; ok && c.WarpSpecialized {
		return t, nil
	}
	t, ok := bwdTiles[p][headDim]
	if !ok {
		return BwdTile{}, fmt.Errorf("hipsrc: head dim %d has no backward tile (%v)", headDim, HeadDims)
	}
	return t, nil
}

// SharedMemBytes returns MASKC_BWD_SMEM_BYTES, the dynamic shared memory of
// maskc_attn_bwd at a head dim: K and V tiles of BlockN keys (K alone with
// ARegs), Q and dO tiles, P^T and dS^T, and a row's LSE and delta (and with
// SplitD a second P^T tile, the one the groups share); with Producer, K and
// V, two stages of Q and dO and two dS^T buffers.
func (t BwdTile) SharedMemBytes(headDim int) int {
	if t.Producer { // the rest is static shared memory
		m := t.StepRows()
		return ElemBytes * (2*t.BlockN*headDim + 4*m*headDim + 2*t.BlockN*m)
	}
	n := t.smemFor(t.BlockN, headDim)
	if t.SplitD {
		n += ElemBytes * t.BlockN * t.BlockM
	}
	return n
}

// DQSharedMemBytes returns MASKC_BWD_DQ_SMEM_BYTES, maskc_attn_bwd_dq's:
// the same tiles with its BlockN / Groups keys.
func (t BwdTile) DQSharedMemBytes(headDim int) int { return t.smemFor(t.BlockN/t.Groups, headDim) }

func (t BwdTile) smemFor(blockN, headDim int) int {
	kv := 2
	if t.ARegs {
		kv = 1
	}
	return ElemBytes*(kv*blockN*headDim+2*t.BlockM*headDim+2*blockN*t.BlockM) + 8*t.BlockM
}

// BwdWGMaxHeadDim is the largest head dim of the sm_90a warpgroup-MMA
// backward (MASKC_BWD_WG in attn_bwd.h, which reads it as
// MASKC_BWD_WG_MAX_HEAD_DIM from BwdTileDefines); above it sm_90a runs the
// mma.sync kernels.
const BwdWGMaxHeadDim = 256

// BwdSemRows is MASKC_BWD_SEM_ROWS: the query rows of one of the ordered
// dQ's turn counters (MaskcBwdShape.dq_sem holds ceil(Sq / BwdSemRows)
// per (b, h)), the rows of one warp's bulk reduction of dQ.
const BwdSemRows = 16

// BwdDQOrderMaxHeadDim is the largest head dim at which the sm_90a kernel
// orders dQ (BwdDQOrders): the ordered entry has been timed up to 128.
const BwdDQOrderMaxHeadDim = 128

// BwdDQOrders reports whether p has maskc_attn_bwd_ordered, which adds dQ
// in order in deterministic mode (MASKC_BWD_DQ_ORDER: the sm_90a warpgroup
// kernel), at a head dim, where the source asks for it (BwdDQOrderDefine).
func (p Platform) BwdDQOrders(headDim int) bool {
	return p == NVIDIAWGMMA && headDim <= BwdWGMaxHeadDim && headDim <= BwdDQOrderMaxHeadDim
}

// BwdDQOrdersAt reports whether some platform orders dQ at a head dim
// (BwdDQOrders).
func BwdDQOrdersAt(headDim int) bool {
	for _, p := range Platforms {
		if p.BwdDQOrders(headDim) {
			return true
		}
	}
	return false
}

// BwdDQOrderDefine is the C text by which a backward source asks for the
// ordered deterministic dQ (attn_bwd.h's MASKC_BWD_DQ_ORDER; the kernel's
// bwd_launch says DQOrdered on the platforms that have it, WithDQOrdered).
const BwdDQOrderDefine = "#define MASKC_BWD_DQ_ORDERED 1  // deterministic dQ added in order by maskc_attn_bwd_ordered\n"

// BwdTileDefines returns the C text that configures attn_bwd.h's tiles for
// a head dim (c: BwdTileOf's) on every platform (the branch of the
// platform a source is compiled for applies): the backward source has it
// right before AttnBwd, so that bwdTiles is the one definition of the tiles.
func BwdTileDefines(headDim int, c BwdChoice) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "// Backward tiles at head dim %d per platform (hipsrc.BwdTileFor).\n", headDim)
	fmt.Fprintf(&b, "#define MASKC_BWD_WG_MAX_HEAD_DIM %d\n", BwdWGMaxHeadDim)
	for _, pc := range []struct {
		p    Platform
		cond string
	}{{AMD, "#if defined(MASKC_PLATFORM_AMD)"}, {NVIDIAWGMMA, "#elif MASKC_NV_WGMMA"}, {NVIDIA, "#else"}} {
		t, err := pc.p.BwdTileOf(headDim, c)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s  // %s\n#define MASKC_BWD_BLOCK_M %d\n#define MASKC_BWD_BLOCK_N %d\n#define MASKC_BWD_AREGS %d\n#define MASKC_BWD_GROUPS %d\n#define MASKC_BWD_SPLIT_D %d\n",
			pc.cond, pc.p, t.BlockM, t.BlockN, b2i(t.ARegs), t.Groups, b2i(t.SplitD))
		if t.Producer {
			b.WriteString("#define MASKC_BWD_WS 1  // maskc_attn_bwd: the warp-specialized kernel\n")
		}
		if t.PairQTiles {
			b.WriteString("#define MASKC_BWD_WS_PAIR 1  // ... on steps of two q tiles\n")
		}
	}
	b.WriteString("#endif\n")
	return b.String(), nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// BwdThreads returns the block size of every backward kernel on p but
// maskc_attn_bwd, whose block is BwdTile.Groups times it
// (BwdLaunchConfig.MainThreads).
func (p Platform) BwdThreads() int { return BwdWarps * p.WarpSize() }

// BwdPreRows returns MASKC_BWD_PRE_ROWS on p: the query rows one block of
// maskc_attn_bwd_pre and maskc_attn_bwd_dq_convert covers.
func (p Platform) BwdPreRows() int { return p.BwdThreads() / BwdPreLanes }

// Tile shape of maskc_attn_fwd: BlockM for every head dim and platform;
// the key tile and the warp layout below depend on the platform.
const (
	// BlockM is the number of query rows one block computes (MASKC_BLOCK_M).
	BlockM = 128
	// BlockN is the number of keys per shared-memory tile (MASKC_BLOCK_N)
	// of the mma.sync and MFMA kernels; see Platform.BlockN.
	BlockN = 32
	// WGMMABlockN is the key tile of the sm_90a warpgroup-MMA kernel.
	WGMMABlockN = 64
	// ElemBytes is the size of one bf16 or fp16 element.
	ElemBytes = 2
)

// Platform is a GPU family and kernel variant; it decides the warp layout.
type Platform int

const (
	// NVIDIA: 32-wide warps, mma.sync tensor cores (sm_80 and later).
	NVIDIA Platform = iota
	// AMD: 64-wide wavefronts, MFMA matrix cores (gfx90a, gfx94x, gfx950).
	AMD
	// NVIDIAWGMMA: Hopper (sm_90a) warpgroup MMA: two warpgroups of 64
	// rows, 64-key tiles, Q read from shared memory by the MMA. Built with
	// WGMMAArch and WGMMAOptions.
	NVIDIAWGMMA
)

// Platforms are all platforms, in the order of the constants.
var Platforms = []Platform{NVIDIA, AMD, NVIDIAWGMMA}

// HIPOptions returns the options of every AMD build of a generated source
// for arch (maskc compile's hipcc, the runtime's hiprtc, the CDNA tests):
// the sources are C++17 (if constexpr, loops in constexpr functions), which
// some hipcc versions do not assume (Debian bookworm's 5.2 compiles C++11
// unless told).
func HIPOptions(arch string) []string {
	return []string{"--offload-arch=" + arch, "-std=c++17", "-O3"}
}

// WGMMAArch is the architecture NVIDIAWGMMA kernels are compiled for
// (wgmma needs the arch-specific sm_90a target; its code runs on sm_90).
const WGMMAArch = "sm_90a"

// WGMMAOptions are the compiler options that select the NVIDIAWGMMA kernel
// in prelude.h.
var WGMMAOptions = []string{"-DMASKC_NV_WGMMA=1"}

// WSOptions, added to WGMMAOptions, select the warp-specialized forward of
// attn_fwd_sm90.h (a producer warpgroup and two consumer warpgroups,
// WSThreads threads, WSSharedMemBytes of shared memory). A generated
// kernel selects it in its source instead (#define MASKC_NV_WS 1, where
// codegen finds that it wins: WSLaunch); WSOptions serve experiments.
var WSOptions = []string{"-DMASKC_NV_WS=1"}

// Launch shape of the warp-specialized forward (attn_fwd_sm90.h).
const (
	// WSThreads is MASKC_WS_THREADS: three warpgroups.
	WSThreads = 384
	// WSStages is MASKC_WS_STAGES, the K and V ring depth.
	WSStages = 2
	// WSWalkBytes is MASKC_WS_WALK_BYTES: the shared memory a kernel with
	// MASKC_WS_WALK adds after WSSharedMemBytes for its walk (MaskcWsWalk:
	// up to 24 intervals in tiles and in keys).
	WSWalkBytes = 640
)

// WSHeadDims are the head dims the warp-specialized forward supports.
var WSHeadDims = []int{64, 128, 256}

// WSBlockN returns MASKC_WS_BLOCK_N, the warp-specialized forward's key
// tile for a head dim.
func WSBlockN(headDim int) int {
	if headDim == 256 {
		return 64
	}
	return 128
}

// WSSharedMemBytes returns MASKC_WS_SMEM_BYTES for a head dim: the Q tile,
// WSStages K and V tiles, and 4*WSStages+1 mbarriers.
func WSSharedMemBytes(headDim int) int {
	return ElemBytes*(BlockM*headDim+2*WSStages*WSBlockN(headDim)*headDim) + 8*(4*WSStages+1)
}

// String returns "nvidia", "amd" or "nvidia-sm90a".
func (p Platform) String() string {
	switch p {
	case AMD:
		return "amd"
	case NVIDIAWGMMA:
		return "nvidia-sm90a"
	}
	return "nvidia"
}

// ForDevice returns the platform a kernel is built for on a device of the
// given backend ("cuda" or "hip") and JIT architecture ("sm_90",
// "gfx942"): the wgmma kernel on sm_90 (Hopper), mma.sync on other NVIDIA
// GPUs, MFMA on AMD.
func ForDevice(backend, arch string) Platform {
	switch {
	case backend == "hip":
		return AMD
	case arch == "sm_90" || arch == "sm_90a":
		return NVIDIAWGMMA
	}
	return NVIDIA
}

// BlockN returns the keys per shared-memory tile on p (MASKC_BLOCK_N).
func (p Platform) BlockN() int {
	if p == NVIDIAWGMMA {
		return WGMMABlockN
	}
	return BlockN
}

// WarpSize returns the threads per warp (wavefront) on p (MASKC_WARP_SIZE).
func (p Platform) WarpSize() int {
	if p == AMD {
		return 64
	}
	return 32
}

// WarpRows returns the query rows of one warp on p (MASKC_WARP_ROWS) at
// head dims up to 128: two m16 MMA blocks with mma.sync, one 16-row MFMA
// block on AMD, a quarter of a warpgroup's 64 rows with wgmma.
func (p Platform) WarpRows() int { return p.WarpRowsAt(128) }

// WarpRowsAt returns MASKC_WARP_ROWS on p at a head dim: above 128 the
// mma.sync kernel has one m16 block per warp (two would need D floats of
// output per lane), like the others.
func (p Platform) WarpRowsAt(headDim int) int {
	if p == NVIDIA && headDim <= 128 {
		return 32
	}
	return 16
}

// NumWarps returns the warps per block on p (MASKC_NUM_WARPS) at head dims
// up to 128.
func (p Platform) NumWarps() int { return p.NumWarpsAt(128) }

// NumWarpsAt returns MASKC_NUM_WARPS on p at a head dim.
func (p Platform) NumWarpsAt(headDim int) int { return BlockM / p.WarpRowsAt(headDim) }

// NumThreads returns the threads per block of maskc_attn_fwd and
// maskc_tile_flags on p (MASKC_NUM_THREADS) at head dims up to 128, except
// for kernels with the warp-specialized forward (WSThreads; the manifest's
// launch says which).
func (p Platform) NumThreads() int { return p.NumThreadsAt(128) }

// NumThreadsAt returns MASKC_NUM_THREADS on p at a head dim (attn_fwd.h's
// forward).
func (p Platform) NumThreadsAt(headDim int) int { return p.NumWarpsAt(headDim) * p.WarpSize() }

// QInRegisters reports whether a warp keeps its Q rows in registers for the
// whole key loop (MASKC_Q_IN_REGS); otherwise Q stays in shared memory.
func (p Platform) QInRegisters() bool { return p == AMD }

// HeadDims are the supported head dims (MASKC_HEAD_DIM).
var HeadDims = []int{64, 128, 256}

// HeadDimSupported reports whether d is one of HeadDims.
func HeadDimSupported(d int) bool { return slices.Contains(HeadDims, d) }

// SharedMemBytes returns the dynamic shared memory of attn_fwd.h's
// maskc_attn_fwd on p for a head dim (MASKC_SMEM_BYTES): two stages of a K
// and a V tile and the Q tile. When Q moves to registers its tile overlaps
// the second stage, or above head dim 128 both stages (MASKC_Q_FIRST: Q is
// read into registers before the first K and V tiles are copied), so that
// 64 KiB of LDS hold head dim 256's tiles. The warp-specialized forward
// takes WSSharedMemBytes.
func SharedMemBytes(p Platform, headDim int) (int, error) {
	if !HeadDimSupported(headDim) {
		return 0, fmt.Errorf("hipsrc: head dim %d is not supported (%s)", headDim, HeadDimList())
	}
	stage := 2 * p.BlockN() * headDim
	q := BlockM * headDim
	switch {
	case p.QInRegisters() && headDim > 128:
		return ElemBytes * max(2*stage, q), nil
	case p.QInRegisters():
		return ElemBytes * (stage + max(q, stage)), nil
	}
	return ElemBytes * (2*stage + q), nil
}

// HeadDimList returns HeadDims for people: "64, 128 or 256".
func HeadDimList() string {
	var parts []string
	for _, d := range HeadDims {
		parts = append(parts, strconv.Itoa(d))
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}

// AttnGrid returns the launch grid of maskc_attn_fwd (Entries[0]'s rule):
// (ceil(Sq/BlockM), H, B).
func AttnGrid(batch, heads, seqQ int) [3]int {
	return Entries[0].Eval(LaunchSizes{B: batch, H: heads, Sq: seqQ}, 1)
}

// FlagsGrid returns the launch grid of maskc_tile_flags (Entries[1]'s
// rule) for key tiles of blockN keys: (ceil(Skv/blockN), ceil(Sq/BlockM), 1).
func FlagsGrid(blockN, seqQ, seqKV int) [3]int {
	return Entries[1].Eval(LaunchSizes{Sq: seqQ, Skv: seqKV}, blockN)
}

// FlagsBytes returns the size of the tile-flag buffer that maskc_tile_flags
// writes and maskc_attn_fwd reads (MaskcShape.tile_flags) for key tiles of
// blockN keys: one byte per (b', h', q tile, kv tile), where batch and heads
// are 1 when the mask does not read b or h (TileFlags).
func FlagsBytes(blockN, batch, heads, seqQ, seqKV int) int {
	return batch * heads * ceilDiv(seqQ, BlockM) * ceilDiv(seqKV, blockN)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
