// Package compiler is maskc's embedding API for trainers. At model build a
// trainer compiles a .flex file or string once (parse, check with -D style
// param overrides, classify, generate kernels), reads the Plan, which says
// for every attention block which Primus-Turbo call is exact or that a
// generated kernel is needed, and loads the generated kernels it will
// launch on a runtime.Device. Every step it then calls Attention.Forward on
// device pointers, which allocates nothing and takes no lock once a shape
// has been seen.
//
//	u, err := compiler.CompileFile("model.flex", compiler.Options{Defines: map[string]string{"WINDOW": "256"}})
//	dev, err := runtime.Open(runtime.Options{})
//	attn, err := u.Load(dev, "packed_layer")      // compile (cached on disk) and load
//	err = attn.Bind("doc", docPtr)                 // captured buffers, by .flex name
//	err = attn.Forward(stream, q, k, v, o, lse, compiler.Sizes{B: 8, H: 16, HKV: 2, Sq: 4096, Skv: 4096})
//
// Errors in the .flex text are returned as dsl.Diagnostics (sorted,
// positioned); runtime failures as *runtime.Error.
package compiler

import (
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/classify"
	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/parser"
)

// MaxFileSize bounds what CompileFile reads.
const MaxFileSize = 64 << 20

// Generated is the Decision pattern and fallback of a generated kernel.
const Generated = "generated"

// Options configure Compile.
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

// CompileFile reads path and compiles it; see Compile.
func CompileFile(path string, opts Options) (*Unit, error) {
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
	return Compile(path, text, opts)
}

// Compile parses, checks and classifies text (named name in diagnostics)
// and generates the kernel of every attention block whose plan is a
// generated kernel or has one as its fallback. When anything is an error
// the returned error is the dsl.Diagnostics, every one sorted, and the Unit
// is nil.
func Compile(name string, text []byte, opts Options) (*Unit, error) {
	file, diags := parser.ParseFile(name, text)
	if diags.HasErrors() {
		return nil, diags
	}
	prog, cd := check.Check(file, check.Options{Defines: opts.Defines})
	diags = append(diags, cd...)
	if diags.HasErrors() {
		diags.Sort()
		return nil, diags
	}
	plan, pd := classify.Classify(prog, classify.Options{Target: opts.Target})
	diags = append(diags, pd...)
	if diags.HasErrors() {
		diags.Sort()
		return nil, diags
	}
	u := New(prog, plan, opts)
	for _, d := range plan.Attentions {
		if !NeedsKernel(d) {
			continue
		}
		if _, err := u.Kernel(d.Name); err != nil {
			if kd, ok := err.(dsl.Diagnostics); ok {
				diags = append(diags, kd...)
				continue
			}
			return nil, err
		}
	}
	diags.Sort()
	if diags.HasErrors() {
		return nil, diags
	}
	u.Warnings = diags
	return u, nil
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
// Turbo (to test or benchmark maskc's kernel for it); the code generator's
// refusals are returned as dsl.Diagnostics.
func (u *Unit) Kernel(name string) (*codegen.Kernel, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if k, ok := u.kernels[name]; ok {
		return k, nil
	}
	a := u.Program.Attention(name)
	if a == nil {
		return nil, fmt.Errorf("no attention block named %q (have %v)", name, u.Names())
	}
	k, diags := codegen.Generate(u.Program, a, u.opts.Kernel)
	if diags.HasErrors() {
		return nil, diags
	}
	u.kernels[name] = k
	return k, nil
}
