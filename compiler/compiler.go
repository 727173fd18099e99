// Package compiler is maskc's one pipeline, used by the command line, the
// language server, genkernels and trainers alike. Its stages follow
// cel-go's Env -> Compile -> Program model:
//
//	ParseAndCheck  text -> *Checked (syntax tree and checked program) + diagnostics
//	Classify       checked program -> *classify.Plan + diagnostics
//	Prepare        text -> *Unit (program, plan; kernels generated on demand) + diagnostics
//	Compile        text -> *Unit (program, plan, generated kernels) + diagnostics
//	Unit.Kernel    the generated kernel of one block (generated on first use)
//	Unit.Load      the kernel compiled and loaded on a runtime.Device
//	Unit.TileCounts, Unit.TileMap  the tiles a kernel visits for one launch
//	WriteDir       an output directory, staged and committed whole
//
// Problems in the .flex text are returned as dsl.Diagnostics (sorted,
// positioned), never as a plain error; only I/O fails with an error.
//
//	u, diags, err := compiler.CompileFile("model.flex", compiler.Options{Defines: map[string]string{"WINDOW": "256"}})
//	dev, err := runtime.Open(runtime.Options{})
//	attn, err := u.Load(dev, "packed_layer")      // compile (cached on disk) and load
//	err = attn.Bind("doc", docPtr)                 // captured buffers, by .flex name
//	err = attn.Forward(stream, q, k, v, o, lse, compiler.Sizes{B: 8, H: 16, HKV: 2, Sq: 4096, Skv: 4096})
//
// Runtime failures are *runtime.Error.
package compiler

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/classify"
	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/parser"
)

// MaxFileSize bounds what CompileFile reads.
const MaxFileSize = 64 << 20

// Generated is the Decision pattern and fallback of a generated kernel
// (classify.PatternGenerated).
const Generated = classify.PatternGenerated

// CodeNoAttention reports a request for an attention block the file does
// not declare.
const CodeNoAttention dsl.Code = "E500"

// Options configure the pipeline.
type Options struct {
	// Defines override params: NAME -> value text, as `-D NAME=VALUE`.
	Defines map[string]string
	// Target is the Turbo build to plan for; nil means
	// classify.DefaultTarget.
	Target *classify.Profile
	// Kernel overrides the head dimension, dtype and layout of generated
	// kernels; zero fields take each attention block's own settings.
	Kernel codegen.Options
}

// Checked is a parsed and checked file.
type Checked struct {
	// File is the syntax tree, as far as the parser got.
	File *dsl.File
	// Program is the checked program; nil when the file has syntax errors
	// (checking a file with holes in it only adds follow-on noise).
	Program *check.Program
}

// ParseAndCheck parses text (named name in diagnostics) and checks it
// with opts.Defines. The diagnostics are sorted; the result is never nil.
func ParseAndCheck(name string, text []byte, opts Options) (*Checked, dsl.Diagnostics) {
	file, diags := parser.ParseFile(name, text)
	c := &Checked{File: file}
	if diags.HasErrors() {
		diags.Sort()
		return c, diags
	}
	var cd dsl.Diagnostics
	c.Program, cd = Check(file, opts)
	diags = append(diags, cd...)
	diags.Sort()
	return c, diags
}

// Check checks a parsed file (also one with syntax errors, as the language
// server does); the program is filled as far as checking got.
func Check(file *dsl.File, opts Options) (*check.Program, dsl.Diagnostics) {
	return check.Check(file, check.Options{Defines: opts.Defines})
}

// Classify plans every attention block of a program that checked without
// errors for opts.Target.
func Classify(p *check.Program, opts Options) (*classify.Plan, dsl.Diagnostics) {
	return classify.Classify(p, classify.Options{Target: opts.Target})
}

// Unit is a compiled .flex file: the checked program, its plan, and the
// generated kernels. It is safe for concurrent use.
type Unit struct {
	// Program is the checked program.
	Program *check.Program
	// Plan says what every attention block becomes.
	Plan *classify.Plan
	// Warnings are the compilation's non-error diagnostics.
	Warnings dsl.Diagnostics

	opts    Options
	mu      sync.Mutex
	kernels map[string]*codegen.Kernel
}

// CompileFile reads path and compiles it; see Compile. The error is for a
// file that cannot be read; problems in its text are the diagnostics.
func CompileFile(path string, opts Options) (*Unit, dsl.Diagnostics, error) {
	text, err := ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	u, diags := Compile(path, text, opts)
	return u, diags, nil
}

// ReadFile reads a .flex file of at most MaxFileSize bytes.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	text, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(text) > MaxFileSize {
		return nil, fmt.Errorf("%s: file larger than %d MiB", path, MaxFileSize>>20)
	}
	return text, nil
}

// Compile parses, checks and classifies text (named name in diagnostics)
// and generates the kernel of every attention block whose plan is a
// generated kernel or has one as its fallback. When any diagnostic is an
// error the Unit is nil; the diagnostics are sorted either way (the
// warnings are also in Unit.Warnings).
func Compile(name string, text []byte, opts Options) (*Unit, dsl.Diagnostics) {
	c, diags := ParseAndCheck(name, text, opts)
	if diags.HasErrors() {
		return nil, diags
	}
	plan, pd := Classify(c.Program, opts)
	diags = append(diags, pd...)
	if diags.HasErrors() {
		diags.Sort()
		return nil, diags
	}
	u := New(c.Program, plan, opts)
	for _, d := range plan.Attentions {
		if NeedsKernel(d) {
			_, kd := u.Kernel(d.Name)
			diags = append(diags, kd...)
		}
	}
	diags.Sort()
	if diags.HasErrors() {
		return nil, diags
	}
	u.Warnings = diags
	return u, diags
}

// Prepare parses, checks and classifies text (named name in diagnostics)
// and returns the Unit without generating a kernel: Unit.Kernel generates
// each on demand, for tools that take every block through the generator
// and report its refusals themselves (genkernels, tilecount). The Unit is
// nil when parsing or checking found errors; the classifier's diagnostics
// are returned beside a Unit (its plan holds the blocks it could decide).
// The diagnostics are sorted.
func Prepare(name string, text []byte, opts Options) (*Unit, dsl.Diagnostics) {
	c, diags := ParseAndCheck(name, text, opts)
	if diags.HasErrors() {
		return nil, diags
	}
	plan, pd := Classify(c.Program, opts)
	diags = append(diags, pd...)
	diags.Sort()
	return New(c.Program, plan, opts), diags
}

// Decide classifies p and adds the code generator's diagnostics (Verdict):
// without errors it returns the Unit of p and its plan, whose kernels are
// generated on demand; with errors the Unit is nil. It is what the maskc
// command runs after ParseAndCheck, to print every diagnostic itself.
func Decide(p *check.Program, opts Options) (*Unit, dsl.Diagnostics) {
	plan, diags := Verdict(p, opts)
	if diags.HasErrors() {
		return nil, diags
	}
	return New(p, plan, opts), diags
}

// WithKernel returns a Unit of u's program and plan whose kernels are
// generated with k (head dimension, dtype, layout, source name) instead of
// u's Options.Kernel; it generates nothing until asked.
func (u *Unit) WithKernel(k codegen.Options) *Unit {
	opts := u.opts
	opts.Kernel = k
	return New(u.Program, u.Plan, opts)
}

// New makes a Unit from a program and plan the caller has already checked
// and classified without errors (as the maskc command does, to print its
// own diagnostics). It generates nothing until Kernel or Load asks.
func New(p *check.Program, plan *classify.Plan, opts Options) *Unit {
	return &Unit{Program: p, Plan: plan, opts: opts, kernels: map[string]*codegen.Kernel{}}
}

// NeedsKernel reports whether a decision calls for a generated kernel: its
// pattern is generated, or a precondition of its Turbo call may fail and
// the generated kernel is the fallback.
func NeedsKernel(d *classify.Decision) bool {
	return d.Pattern == Generated || d.Fallback == Generated
}

// KernelDiagnostics returns the code generator's diagnostics for every block
// of plan that needs a kernel (see NeedsKernel), without writing the
// kernels' sources (E3xx: E303 for too many buffers, E311 for int
// arithmetic that may overflow int64, ...). It is how `maskc check` and the language server
// report every diagnostic Compile would, positioned in the source; plan
// must come from a program that checked and classified without errors.
func KernelDiagnostics(p *check.Program, plan *classify.Plan, opts Options) dsl.Diagnostics {
	if p == nil || plan == nil {
		return nil
	}
	var diags dsl.Diagnostics
	for _, d := range plan.Attentions {
		if a := p.Attention(d.Name); a != nil && NeedsKernel(d) {
			diags = append(diags, dropFollowOn(codegen.Diagnose(p, a, kernelOptions(opts, plan)))...)
		}
	}
	return diags
}

// Verdict classifies p and, when that succeeds, adds the code generator's
// diagnostics (KernelDiagnostics): the one verdict that `maskc check`,
// `classify`, `compile`, `draw`, `run` and the language server give a file.
// A file it reports errors for has no plan any command may act on.
func Verdict(p *check.Program, opts Options) (*classify.Plan, dsl.Diagnostics) {
	plan, diags := Classify(p, opts)
	if !diags.HasErrors() {
		diags = append(diags, KernelDiagnostics(p, plan, opts)...)
	}
	diags.Sort()
	return plan, diags
}

// kernelOptions are the code generator's options for a program planned as
// plan: opts.Kernel, carrying on with the normal forms the classifier
// computed (each mask is put in normal form once per compilation).
func kernelOptions(opts Options, plan *classify.Plan) codegen.Options {
	k := opts.Kernel
	if plan != nil && k.Forms == nil {
		k.Forms = plan.Forms
	}
	return k
}

// dropFollowOn removes the code generator's internal-error diagnostics
// (E307 on a buffer missing from the kernel's buffer table) when another
// error of the same kernel explains them: a buffer refused by E303, E304 or
// E308 is left out of the table, and every read of it then fails too.
// Alone, an E307 is a real defect and is kept.
func dropFollowOn(diags dsl.Diagnostics) dsl.Diagnostics {
	other := false
	for _, d := range diags {
		if d.Severity == dsl.SeverityError && !followOn(d) {
			other = true
		}
	}
	if !other {
		return diags
	}
	out := diags[:0:0]
	for _, d := range diags {
		if !followOn(d) {
			out = append(out, d)
		}
	}
	return out
}

// followOn reports whether d is the code generator's internal error about a
// buffer that is not in the kernel's buffer table.
func followOn(d *dsl.Diagnostic) bool {
	return d.Code == codegen.CodeBufferIndex && strings.HasPrefix(d.Message, "internal error:")
}

// Decision returns the plan of attention block name, or nil.
func (u *Unit) Decision(name string) *classify.Decision {
	for _, d := range u.Plan.Attentions {
		if d.Name == name {
			return d
		}
	}
	return nil
}

// Names lists the attention blocks in declaration order.
func (u *Unit) Names() []string {
	names := make([]string, len(u.Plan.Attentions))
	for i, d := range u.Plan.Attentions {
		names[i] = d.Name
	}
	return names
}

// Kernel returns the generated kernel of attention block name, generating
// it on first use. It works for every block, also one the plan maps onto
// Turbo (to test or benchmark maskc's kernel for it). The diagnostics are
// the code generator's (refusals are errors, with a nil kernel), or
// CodeNoAttention.
func (u *Unit) Kernel(name string) (*codegen.Kernel, dsl.Diagnostics) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if k, ok := u.kernels[name]; ok {
		return k, nil
	}
	a := u.Program.Attention(name)
	if a == nil {
		var diags dsl.Diagnostics
		diags.Add(u.Program.File.Source, dsl.NoSpan, CodeNoAttention, "no attention block named %q (have %v)", name, u.Names())
		return nil, diags
	}
	k, diags := codegen.Generate(u.Program, a, kernelOptions(u.opts, u.Plan))
	diags = dropFollowOn(diags)
	if diags.HasErrors() {
		return nil, diags
	}
	u.kernels[name] = k
	return k, diags
}
