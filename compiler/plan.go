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
	// Kernel names the generated kernel written for the block, present
	// when its pattern or fallback is generated: the ID of its descriptor
	// in manifest.json beside plan.json (hipsrc.KernelDesc,
	// hipsrc/MANIFEST.md), which says everything about it.
	Kernel string `json:"kernel,omitempty"`
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

// KernelDesc is the descriptor of kernel k of block d as written to source,
// declared in the .flex file flex: k's own with the output files and the
// plan filled in.
func KernelDesc(k *codegen.Kernel, d *classify.Decision, source, flex string) hipsrc.KernelDesc {
	m := k.Files(source)
	m.Flex = filepath.ToSlash(flex)
	if d != nil {
		m.Pattern, m.Fallback = d.Pattern, d.Fallback
	} else {
		m.Pattern = Generated
	}
	return m
}
