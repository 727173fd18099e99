// Package codegen turns checked masks and scores into HIP C++ source for
// maskc's fused flash-attention forward kernel.
//
// It generates the per-attention part of a kernel: configuration #defines,
// the device functions maskc_mask and maskc_score (the lowered .flex
// expression with Python semantics: floor // and %, int64 index arithmetic,
// guarded buffer reads), and the block-sparsity functions maskc_kv_range,
// maskc_q_range (its mirror, for the backward's walk over the q tiles that
// see a kv tile) and maskc_tile_full, derived in closed form from the
// mask's normal form (package normal, the one classify reads too: bounds on
// linear forms over the indices, sizes, floor quotients by constants and
// q/kv-free symbols such as prefix_len[b]; segment equalities; opaque
// atoms), or, where the mask cannot be bounded, a request for the
// template's tile-flag pre-pass. The block sparsity is a
// plan (sparsityplan.go) that the C printer turns into those functions and
// that HostSparsity evaluates on the CPU, so that the tile maps maskc draws
// (package tilemap) are the kernel's own. Generate assembles that
// part with the platform prelude and the attention template of package
// hipsrc into one self-contained source text that hipcc, nvcc and NVRTC
// accept.
//
// Semantics of the generated functions, where C and Python differ:
//
//   - ints are int32 (int) where an interval analysis (intrange.go) proves
//     every operation exact under the launch preconditions (MaxSeqLen,
//     MaxHeadsOrBatch: 0 <= q < Q <= 2^31 - 257 and so on), else int64
//     (long long): q - kv and (q - kv) % 2 are int, q + kv and q * kv are
//     long long. // and % floor as in Python (maskc_py_floordiv,
//     maskc_py_floormod in hipsrc/runtime.h); by a constant 2^k they are >> k
//     and & (2^k - 1), by another positive constant C's / and % when the
//     dividend is non-negative, else a branch-free correction. Python
//     raises on a zero divisor and a kernel cannot, so an int x // 0 and
//     x % 0 give 0, a float x // 0.0 gives x / 0.0 (inf or nan, as torch).
//     Int64 overflow wraps where Python would grow the int.
//   - a score is computed in fp32 like the kernel; a mask, whose result is
//     an exact keep/drop decision, computes its (rare) float subexpressions
//     in fp64 like the reference evaluator.
//   - min and max are Python's (the first argument unless the second is
//     strictly smaller / larger); int ** needs a constant exponent >= 0.
//   - a buffer read goes through a generated accessor that checks every
//     index against the extents the launcher passes in MaskcBuffers.dim and
//     reads nothing when one is out of range, returning 0 (false) instead;
//     int32 indices take an overload whose check is one unsigned compare.
//     The launchers refuse a call at whose sizes a read that can change the
//     result (any mask read; a score read on a kept pair) would fall
//     outside (readbounds.go: Kernel.Reads, the manifest's reads), so the
//     guard only makes reads in masked-out or padding lanes harmless; a
//     read whose index comes from buffer values calls a flagged accessor
//     that also sets MASKC_STATUS_READ_OUT_OF_RANGE when out of range.
//   - `where` and `x if c else y` evaluate both branches (no side effects).
//
// Every part also carries the score-gradient interface backward kernels
// call (gradfunc.go): MASKC_SCORE_GRAD_READS, struct MaskcScoreGradRead and
// maskc_score_grad, which returns d score_out / d score_in and fills one
// (slot, element offset, partial derivative) entry per differentiable
// float-buffer read. The derivatives come from package grad (torch.autograd's
// rules), computed in fp32 with the same guarded reads as maskc_score; a
// read outside its buffer, or whose partial derivative is 0, has slot -1.
// maskc_score_grad_read_axes and maskc_score_grad_read_slot say which of q
// and kv each read's element depends on and its buffer slot, so that a
// kernel sums a read of one element per (b, h), such as slopes[h], per tile.
// Kernel.GradBuffers names the buffers that have such reads.
//
// Every statement of maskc_mask and maskc_score is preceded by a #line
// directive naming the .flex line it came from, so compiler errors and
// debuggers point at the mask source.
package codegen
