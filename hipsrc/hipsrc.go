// Package hipsrc holds the hand-written GPU sources of maskc's generated
// attention kernels, embedded as text, and the tile shape they are built for.
//
// A generated kernel is one self-contained source text (NVRTC and hiprtc
// cannot read include files), assembled in this order:
//
//  1. Prelude: the only place with platform differences (NVIDIA mma.sync and
//     cp.async, AMD MFMA; warp size; shuffles; element conversions).
//  2. The generated part (package codegen): configuration #defines
//     (MASKC_HEAD_DIM, MASKC_DTYPE_BF16 or MASKC_DTYPE_F16, MASKC_HAS_MASK,
//     MASKC_HAS_SCORE, MASKC_HAS_SINK, MASKC_SPARSITY_ANALYTIC, _PREPASS or
//     _NONE, optionally MASKC_MASK_USES_B / MASKC_MASK_USES_H set to 0 when
//     the mask ignores b / h), struct MaskcBuffers, and the device functions
//     maskc_mask, maskc_score, maskc_kv_range and maskc_tile_full.
//  3. AttnFwd: the fused flash-attention forward, entry points
//     maskc_attn_fwd and maskc_tile_flags with C linkage.
//
// The constants below mirror the #defines of AttnFwd and Prelude; a test
// keeps them equal. Launchers use them for grids, blocks and shared memory.
package hipsrc

import (
	_ "embed"
	"fmt"
)

// Prelude is the platform prelude (hipsrc/prelude.h).
//
//go:embed prelude.h
var Prelude string

// AttnFwd is the fused attention forward template (hipsrc/attn_fwd.h).
//
//go:embed attn_fwd.h
var AttnFwd string

// Tile shape of maskc_attn_fwd, the same for every supported head dim and
// platform; the warp layout below depends on the platform.
const (
	// BlockM is the number of query rows one block computes (MASKC_BLOCK_M).
	BlockM = 128
	// BlockN is the number of keys per shared-memory tile (MASKC_BLOCK_N).
	BlockN = 32
	// ElemBytes is the size of one bf16 or fp16 element.
	ElemBytes = 2
)

// Platform is a GPU vendor family; it decides the warp layout.
type Platform int

const (
	// NVIDIA: 32-wide warps, mma.sync tensor cores (sm_80 and later).
	NVIDIA Platform = iota
	// AMD: 64-wide wavefronts, MFMA matrix cores (gfx90a, gfx94x, gfx950).
	AMD
)

// String returns "nvidia" or "amd".
func (p Platform) String() string {
	if p == AMD {
		return "amd"
	}
	return "nvidia"
}

// WarpSize returns the threads per warp (wavefront) on p (MASKC_WARP_SIZE).
func (p Platform) WarpSize() int {
	if p == AMD {
		return 64
	}
	return 32
}

// WarpRows returns the query rows of one warp on p (MASKC_WARP_ROWS): two
// m16 MMA blocks on NVIDIA, one 16-row MFMA block on AMD.
func (p Platform) WarpRows() int {
	if p == AMD {
		return 16
	}
	return 32
}

// NumWarps returns the warps per block on p (MASKC_NUM_WARPS).
func (p Platform) NumWarps() int { return BlockM / p.WarpRows() }

// NumThreads returns the threads per block of maskc_attn_fwd and
// maskc_tile_flags on p (MASKC_NUM_THREADS).
func (p Platform) NumThreads() int { return p.NumWarps() * p.WarpSize() }

// QInRegisters reports whether a warp keeps its Q rows in registers for the
// whole key loop (MASKC_Q_IN_REGS); otherwise Q stays in shared memory.
func (p Platform) QInRegisters() bool { return p == AMD }

// HeadDims are the supported head dims (MASKC_HEAD_DIM).
var HeadDims = []int{64, 128}

// SharedMemBytes returns the dynamic shared memory of maskc_attn_fwd on p
// for a head dim (MASKC_SMEM_BYTES): two stages of a K and a V tile and the Q
// tile, which overlaps the second stage when Q moves to registers.
func SharedMemBytes(p Platform, headDim int) (int, error) {
	if headDim != 64 && headDim != 128 {
		return 0, fmt.Errorf("hipsrc: head dim %d is not supported (64 or 128)", headDim)
	}
	stage := 2 * BlockN * headDim
	q := BlockM * headDim
	if p.QInRegisters() {
		return ElemBytes * (stage + max(q, stage)), nil
	}
	return ElemBytes * (2*stage + q), nil
}

// AttnGrid returns the launch grid of maskc_attn_fwd: (ceil(Sq/BlockM), H, B).
func AttnGrid(batch, heads, seqQ int) [3]int {
	return [3]int{ceilDiv(seqQ, BlockM), heads, batch}
}

// FlagsGrid returns the launch grid of maskc_tile_flags:
// (ceil(Skv/BlockN), ceil(Sq/BlockM), 1).
func FlagsGrid(seqQ, seqKV int) [3]int {
	return [3]int{ceilDiv(seqKV, BlockN), ceilDiv(seqQ, BlockM), 1}
}

// FlagsBytes returns the size of the tile-flag buffer that maskc_tile_flags
// writes and maskc_attn_fwd reads (MaskcShape.tile_flags):
// one byte per (b, h, q tile, kv tile).
func FlagsBytes(batch, heads, seqQ, seqKV int) int {
	return batch * heads * ceilDiv(seqQ, BlockM) * ceilDiv(seqKV, BlockN)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
