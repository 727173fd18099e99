// Package runtime runs maskc's generated attention kernels on a GPU from Go,
// with no cgo: it opens a backend (CUDA through libcuda and NVRTC, or HIP
// through libamdhip64 and hiprtc, loaded with purego; or a CPU fake in
// tests), JIT-compiles kernel source for the device's architecture with an
// on-disk cache, and launches kernels through a generic launcher or the
// attention launcher, whose per-call path allocates nothing and takes no
// lock once a shape has been seen.
//
// Typical use:
//
//	dev, err := runtime.Open(runtime.Options{})          // MASKC_BACKEND=cuda|hip or automatic
//	attn, err := dev.NewAttention(spec)                   // compile (cached) + load
//	err = attn.Forward(stream, q, k, v, o, lse, shape, buffers)
//	err = attn.Backward(stream, q, k, v, o, lse, shape, buffers, grads, deterministic)
//
// A spec is the kernel's descriptor (hipsrc.KernelDesc: what codegen fills
// and manifest.json serialises), the platform and the sources; every launch
// fact is read from the descriptor, and every entry point's parameters are
// bound by name to the values the runtime holds, as the ABI's entries list
// them (params.go).
//
// A forward whose launch on its platform says tensor_maps
// (hipsrc.LaunchConfig.TensorMaps: the sm_90a warp-specialized forward)
// gets the copy engine's maps of Q, K and V in its last parameter
// (MaskcTensorMaps), and a backward whose launch says them
// (hipsrc.BwdLaunchConfig.TensorMaps: the warp-specialized backward) gets
// Q's, K's, V's and dO's in maskc_attn_bwd's, encoded per launch by a
// backend that is a backend.TensorMapEncoder (CUDA 12 and later); every
// other launch, and one whose maps the encoder refuses, gets them zero
// (ok = 0), and the kernel copies without them (tensormaps.go).
//
// Backward (when the spec carries a backward source) compiles the backward
// kernels on first use and launches the descriptor's BwdEntries in order,
// each when its hipsrc.BwdEntries When says: delta, the tile flags
// (pre-pass kernels), dK/dV per kv tile, dQ by atomics or the
// deterministic per-q-tile kernel, the sink and the buffer gradients.
//
// A new shape is checked before anything is launched for it: beside the
// sizes and strides, every buffer read of the descriptor's Reads (the code
// generator's index ranges by the sizes) against the buffers' extents, so
// a call at whose sizes a read would fall outside is refused (E410, naming
// the .flex read, its range and the extent) instead of reading 0. A read
// whose index comes from buffer values is left to the kernel, which sets
// hipsrc.StatusReadOutOfRange in the status word (Status) when it falls
// outside.
//
// Sub-packages: backend (the interface), cuda, hip, fake (implementations),
// kcache (the on-disk cache), jitlog (compiler logs to diagnostics),
// host (bf16 and
// fp16 conversion and buffer encoding for host-side data). Package
// github.com/maskc/maskc/compiler is the trainer-facing API on top: compile a
// .flex file once, then Load, Bind, Forward and Backward per attention
// block.
package runtime
