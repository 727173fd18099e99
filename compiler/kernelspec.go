package compiler

// This file connects the code generator to the runtime (formerly package
// runtime/genkernel): it turns a *codegen.Kernel and the checked program it
// came from into the runtime.AttentionSpec and runtime.Shape the attention
// launcher takes, so that runtime imports neither check nor codegen.

import (
	"fmt"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/runtime"
)

// KernelSpec describes kernel k of program p for a device of the given backend
// ("cuda", "hip" or "fake") and architecture ("sm_90", "gfx942", ...),
// which decide the kernel variant and its block shape (hipsrc.ForDevice):
// on Hopper the sm_90a warpgroup-MMA kernel, compiled for sm_90a.
func KernelSpec(p *check.Program, k *codegen.Kernel, backend, arch string) (runtime.AttentionSpec, error) {
	platform := hipsrc.ForDevice(backend, arch)
	launch, ok := k.Launch[platform.String()]
	if !ok {
		return runtime.AttentionSpec{}, fmt.Errorf("compiler: kernel %s has no launch configuration for %s", k.Name, platform)
	}
	spec := runtime.AttentionSpec{
		Source: k.Source, Name: k.Name + ".cu", Flex: p.File.Source,
		BlockM: k.BlockM, BlockN: launch.BlockN, NumThreads: launch.Threads, SharedBytes: launch.SharedMemBytes,
		HeadDim: k.HeadDim, FlagsPerBatch: k.MaskUsesB, FlagsPerHead: k.MaskUsesH, Reads: k.Reads,
	}
	if k.BwdSource != "" {
		bl, err := hipsrc.BwdLaunchOn(platform, k.HeadDim)
		if err != nil {
			return runtime.AttentionSpec{}, fmt.Errorf("compiler: kernel %s: %w", k.Name, err)
		}
		spec.Backward = &runtime.BackwardSpec{
			Source: k.BwdSource, Name: k.Name + ".bwd.cu", Threads: bl.Threads, PreRows: platform.BwdPreRows(),
			BlockM: bl.BlockM, BlockN: bl.BlockN, SharedBytes: bl.SharedMemBytes,
		}
	}
	grad := map[int]bool{}
	for _, b := range k.GradBuffers {
		grad[b.Slot] = true
	}
	if platform == hipsrc.NVIDIAWGMMA {
		spec.Arch = hipsrc.WGMMAArch
		spec.CompileOptions = append(spec.CompileOptions, hipsrc.WGMMAOptions...)
	}
	spec.SegCheck = k.SegCheckEntry != ""
	switch k.Sparsity {
	case codegen.SparsityAnalytic:
		spec.Sparsity = runtime.SparsityAnalytic
	case codegen.SparsityPrepass:
		spec.Sparsity = runtime.SparsityPrepass
	case codegen.SparsityNone:
		spec.Sparsity = runtime.SparsityNone
	default:
		return spec, fmt.Errorf("compiler: kernel %s has unknown sparsity %q", k.Name, k.Sparsity)
	}
	for _, b := range k.Buffers {
		if b.Slot != len(spec.Buffers) {
			return spec, fmt.Errorf("compiler: buffer %s is in slot %d, expected %d", b.Name, b.Slot, len(spec.Buffers))
		}
		decl := findBuffer(p, b.Decl)
		if decl == nil {
			return spec, fmt.Errorf("compiler: buffer %s is not declared in the program", b.Name)
		}
		if len(decl.Dims) < 1 || len(decl.Dims) > 2 {
			return spec, fmt.Errorf("compiler: buffer %s has %d dimensions; the kernel ABI takes 1 or 2", b.Name, len(decl.Dims))
		}
		dims := decl.Dims
		spec.Buffers = append(spec.Buffers, runtime.BufferSpec{Name: b.Name, DType: decl.DType, Segments: decl.Segments, Grad: grad[b.Slot], Dims: func(s runtime.Sizes) [2]int64 {
			sizes := map[dsl.Var]int64{dsl.SizeB: s.B, dsl.SizeH: s.H, dsl.SizeHKV: s.HKV, dsl.SizeQ: s.Q, dsl.SizeKV: s.KV}
			out := [2]int64{1, 1}
			for i, d := range dims {
				out[i] = d.Eval(sizes)
			}
			return out
		}})
	}
	return spec, nil
}

func findBuffer(p *check.Program, decl *dsl.BufferDecl) *check.Buffer {
	for _, b := range p.Buffers {
		if b.Decl == decl {
			return b
		}
	}
	return nil
}

// KernelShape is the launch shape for dense tensors in the kernel's layout, with
// the kernel's softmax scale.
func KernelShape(k *codegen.Kernel, b, h, hkv, sq, skv int) runtime.Shape {
	layout := runtime.BSHD
	if k.Layout == hipsrc.LayoutBHSD {
		layout = runtime.BHSD
	}
	s := runtime.ContiguousShape(layout, b, h, hkv, sq, skv, k.HeadDim)
	s.Scale = float32(k.Scale)
	return s
}
