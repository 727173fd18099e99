package compiler

import (
	"bytes"
	"encoding/json"
	"path/filepath"

	"github.com/maskc/maskc/classify"
	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/hipsrc"
)

// PlanFile is plan.json as `maskc compile` writes it: the classifier's
// plan with, for every block that needs a generated kernel, the kernel
// written for it. classify/PLAN.md documents the schema.
type PlanFile struct {
	// Version is classify.PlanVersion.
	Version int `json:"version"`
	// Target is the Turbo target profile planned for.
	Target string `json:"target"`
	// Attentions are the decisions, one per attention block.
	Attentions []*PlanAttention `json:"attentions"`
}

// PlanAttention is one block's decision and its kernel.
type PlanAttention struct {
	*classify.Decision
	// Kernel is the generated kernel written for the block, present when
	// its pattern or fallback is generated.
	Kernel *PlanKernel `json:"kernel,omitempty"`
}

// PlanKernel describes a kernel source written beside plan.json (the full
// launch description is in manifest.json, hipsrc/MANIFEST.md).
type PlanKernel struct {
	// Source is the kernel source's file name.
	Source string `json:"source"`
	// CodeObjects are prebuilt code objects by architecture.
	CodeObjects map[string]string `json:"code_objects,omitempty"`
	// Entry and FlagsEntry are the entry points (FlagsEntry only for
	// prepass sparsity).
	Entry      string `json:"entry"`
	FlagsEntry string `json:"flags_entry,omitempty"`
	// Sparsity and SparsityReason say how the kernel skips tiles and why.
	Sparsity       hipsrc.Sparsity `json:"sparsity"`
	SparsityReason string          `json:"sparsity_reason"`
	// HeadDim, DType and Layout are the configuration compiled in.
	HeadDim int           `json:"head_dim"`
	DType   string        `json:"dtype"`
	Layout  hipsrc.Layout `json:"layout"`
	// BlockM and BlockN are the query rows per block and the mma.sync and
	// MFMA key tile; Launch has every platform's.
	BlockM int `json:"block_m"`
	BlockN int `json:"block_n"`
	// Launch is the block size, key tile and shared memory per platform.
	Launch map[string]hipsrc.LaunchConfig `json:"launch"`
	// Scale is the softmax scale to launch with.
	Scale float64 `json:"scale"`
	// Buffers are the captured buffers in MaskcBuffers slot order.
	Buffers []string `json:"buffers"`
	// GradBuffers are the buffers maskc_score_grad differentiates (every
	// other buffer's gradient is zero), in slot order.
	GradBuffers []string `json:"grad_buffers"`
	// ScoreGradReads is the number of reads maskc_score_grad reports.
	ScoreGradReads int `json:"score_grad_reads"`
}

// NewPlanFile returns the plan of u without kernels.
func (u *Unit) NewPlanFile() *PlanFile {
	pf := &PlanFile{Version: u.Plan.Version, Target: u.Plan.Target, Attentions: []*PlanAttention{}} // [], never null
	for _, d := range u.Plan.Attentions {
		pf.Attentions = append(pf.Attentions, &PlanAttention{Decision: d})
	}
	return pf
}

// Attention returns the entry of block name, or nil.
func (pf *PlanFile) Attention(name string) *PlanAttention {
	for _, a := range pf.Attentions {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// JSON returns the plan as indented JSON with a final newline.
func (pf *PlanFile) JSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(pf); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// NewPlanKernel describes kernel k written as source.
func NewPlanKernel(k *codegen.Kernel, source string) *PlanKernel {
	pk := &PlanKernel{
		Source: source, Entry: k.Entry, FlagsEntry: k.FlagsEntry, Sparsity: k.Sparsity, SparsityReason: k.SparsityReason,
		HeadDim: k.HeadDim, DType: k.DType, Layout: k.Layout, BlockM: k.BlockM, BlockN: k.BlockN, Launch: k.Launch,
		Scale: k.Scale, Buffers: []string{},
	}
	for _, b := range k.Buffers {
		pk.Buffers = append(pk.Buffers, b.Name)
	}
	pk.GradBuffers = []string{}
	for _, b := range k.GradBuffers {
		pk.GradBuffers = append(pk.GradBuffers, b.Name)
	}
	pk.ScoreGradReads = k.ScoreGradReads
	return pk
}

// KernelManifest is the manifest entry of kernel k of block d, written as
// source, declared in the .flex file flex.
func KernelManifest(k *codegen.Kernel, d *classify.Decision, source, flex string) hipsrc.KernelManifest {
	m := k.Manifest(source)
	m.Flex = filepath.ToSlash(flex)
	if d != nil {
		m.Pattern, m.Fallback = d.Pattern, d.Fallback
	} else {
		m.Pattern = Generated
	}
	return m
}
