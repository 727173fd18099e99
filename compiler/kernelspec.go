package compiler

// This file connects the code generator to the runtime (formerly package
// runtime/genkernel): it turns a *codegen.Kernel and the checked program it
// came from into the runtime.AttentionSpec and runtime.Shape the attention
// launcher takes, so that runtime imports neither check nor codegen.

import (
	"fmt"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/runtime"
)

// KernelSpec describes kernel k of program p for a device of the given backend
// ("cuda", "hip" or "fake") and architecture ("sm_90", "gfx942", ...),
// which decide the kernel variant and its block shape (hipsrc.ForDevice):
// on Hopper the sm_90a warpgroup-MMA kernel, compiled for sm_90a. The
// runtime reads every launch fact from k's descriptor.
func KernelSpec(p *check.Program, k *codegen.Kernel, backend, arch string) (runtime.AttentionSpec, error) {
	platform := hipsrc.ForDevice(backend, arch)
	if _, ok := k.Launch[platform.String()]; !ok {
		return runtime.AttentionSpec{}, fmt.Errorf("compiler: kernel %s has no launch configuration for %s", k.Name, platform)
	}
	return runtime.AttentionSpec{Kernel: k.Files(k.Name + ".cu"), Platform: platform, Source: k.Source, BwdSource: k.BwdSource, Flex: p.File.Source}, nil
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
