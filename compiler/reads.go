package compiler

import (
	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/classify"
	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/hipsrc"
)

// Read is one buffer read of an attention block's kernel, with its index
// bounds (codegen.Reads) and the read buffer's extents when they are
// constants.
type Read struct {
	// Block is the attention block whose kernel reads.
	Block string
	hipsrc.ReadBound
	// Extents are the buffer's constant extents, nil when not constant.
	Extents []int64
}

// Reads lists the buffer reads of the kernels of every attention block of
// a program that checked and classified (as plan) without errors, block by
// block in declaration order: what the language server shows on a hover
// over a read.
func Reads(p *check.Program, plan *classify.Plan, opts Options) []Read {
	var out []Read
	kopts := kernelOptions(opts, plan)
	for _, at := range p.Attentions {
		for _, r := range codegen.Reads(p, at, kopts) {
			var ext []int64
			for _, b := range p.Buffers {
				if b.Decl.Name.Name == r.Buffer {
					ext = codegen.ConstExtents(p, b.Decl)
				}
			}
			out = append(out, Read{Block: at.Name, ReadBound: r, Extents: ext})
		}
	}
	return out
}

// Note says whether the read stays inside its buffer (codegen.ReadNote).
func (r Read) Note() string { return codegen.ReadNote(r.ReadBound, r.Extents) }
