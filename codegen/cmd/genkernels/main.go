// Command genkernels writes the generated HIP kernel of every attention
// block of the given .flex files, and a manifest describing them for GPU
// test harnesses:
//
//	go run ./codegen/cmd/genkernels -o DIR [-D NAME=VALUE]... [-head-dim N] [-dtype bf16|fp16] [-layout bshd|bhsd] FILE.flex...
//
// DIR/<attention>.cu is the full self-contained source (prefixed with the
// file's base name when two files declare the same attention name) and
// DIR/manifest.json lists, per kernel, its name and source file, the
// attention block and .flex file it came from, the configuration, the block
// sparsity, the captured buffers in MaskcBuffers order and the mask and
// score as PyTorch expressions. Attention blocks that cannot be generated
// are reported on stderr and listed under "skipped"; with -strict they make
// the command fail.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/classify"
	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/parser"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// Manifest is the content of manifest.json.
type Manifest struct {
	// Version is the schema version, 1.
	Version int `json:"version"`
	// Kernels are the generated kernels in input order.
	Kernels []ManifestKernel `json:"kernels"`
	// Skipped are the attention blocks that could not be generated.
	Skipped []Skipped `json:"skipped"`
}

// ManifestKernel describes one generated kernel.
type ManifestKernel struct {
	// Name identifies the kernel: the file name without .cu.
	Name string `json:"name"`
	// Source is the kernel's source file in the output directory.
	Source string `json:"source"`
	// Flex is the .flex file the attention block is declared in.
	Flex           string           `json:"flex"`
	Attention      string           `json:"attention"`
	Pattern        string           `json:"pattern"`
	Fallback       string           `json:"fallback,omitempty"`
	Entry          string           `json:"entry"`
	FlagsEntry     string           `json:"flags_entry,omitempty"`
	HeadDim        int              `json:"head_dim"`
	DType          string           `json:"dtype"`
	Layout         string           `json:"layout"`
	Scale          float64          `json:"scale"`
	KVHeads        int              `json:"kv_heads"`
	Sparsity       string           `json:"sparsity"`
	SparsityReason string           `json:"sparsity_reason"`
	HasMask        bool             `json:"has_mask"`
	HasScore       bool             `json:"has_score"`
	Sink           string           `json:"sink,omitempty"`
	MaskUsesB      bool             `json:"mask_uses_b"`
	MaskUsesH      bool             `json:"mask_uses_h"`
	Buffers        []ManifestBuffer `json:"buffers"`
	// ScoreGradReads is MASKC_SCORE_GRAD_READS, the number of buffer reads
	// maskc_score_grad reports.
	ScoreGradReads int `json:"score_grad_reads"`
	BlockM         int `json:"block_m"`
	BlockN         int `json:"block_n"`
	Threads        int `json:"threads"`
	// Launch is the key tile, block size and shared memory per platform
	// ("amd", "nvidia", "nvidia-sm90a").
	Launch     map[string]codegen.LaunchConfig `json:"launch"`
	MaskTorch  string                          `json:"mask_torch"`
	ScoreTorch string                          `json:"score_torch"`
	// BwdSource is the backward kernels' source file (hipsrc/attn_bwd.h
	// after the forward), BwdEntries their entry points in launch order.
	BwdSource  string   `json:"bwd_source"`
	BwdEntries []string `json:"bwd_entries"`
	// BwdBlockM and BwdBlockN are the backward's q and kv tiles;
	// BwdSharedMemBytes the dynamic shared memory of maskc_attn_bwd and
	// maskc_attn_bwd_dq (4 warps per block on every platform).
	BwdBlockM         int `json:"bwd_block_m"`
	BwdBlockN         int `json:"bwd_block_n"`
	BwdSharedMemBytes int `json:"bwd_shared_mem_bytes"`
}

// ManifestBuffer is one MaskcBuffers entry.
type ManifestBuffer struct {
	Name     string   `json:"name"`
	Slot     int      `json:"slot"`
	DType    string   `json:"dtype"`
	Dims     []string `json:"dims"`
	Segments bool     `json:"segments"`
	// Grad says that the score reads the buffer differentiably
	// (Kernel.GradBuffers): its gradient comes from maskc_score_grad's
	// reads; every other buffer's gradient is zero.
	Grad bool `json:"grad"`
}

// Skipped is an attention block that could not be generated.
type Skipped struct {
	Flex        string `json:"flex"`
	Attention   string `json:"attention"`
	Diagnostics string `json:"diagnostics"`
}

type defines map[string]string

func (d defines) String() string { return "" }
func (d defines) Set(s string) error {
	name, value, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return errors.New("want NAME=VALUE")
	}
	d[name] = value
	return nil
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("genkernels", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "output directory (required)")
	strict := fs.Bool("strict", false, "fail when an attention block cannot be generated")
	var opts codegen.Options
	fs.IntVar(&opts.HeadDim, "head-dim", 0, "head dimension, 64 or 128 (default: the block's head_dim, else 128)")
	fs.StringVar(&opts.DType, "dtype", "", "bf16 or fp16 (default: the block's dtype, else bf16)")
	fs.StringVar(&opts.Layout, "layout", "", "bshd or bhsd (default: the block's layout, else bshd)")
	defs := defines{}
	fs.Var(defs, "D", "override a param: -D NAME=VALUE (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: genkernels -o DIR [flags] FILE.flex...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *out == "" || fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	type job struct {
		path string
		prog *check.Program
		plan *classify.Plan
	}
	var jobs []job
	count := map[string]int{}
	failed := false
	for _, path := range fs.Args() {
		text, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		f, diags := parser.ParseFile(path, text)
		if !diags.HasErrors() {
			var p *check.Program
			p, diags = check.Check(f, check.Options{Defines: defs})
			if !diags.HasErrors() {
				plan, _ := classify.Classify(p, classify.Options{})
				jobs = append(jobs, job{path, p, plan})
				for _, a := range p.Attentions {
					count[a.Name]++
				}
				continue
			}
		}
		fmt.Fprint(stderr, diags.Errors().Render())
		failed = true
	}
	m := Manifest{Version: 1, Kernels: []ManifestKernel{}, Skipped: []Skipped{}}
	for _, j := range jobs {
		for _, a := range j.prog.Attentions {
			k, diags := codegen.Generate(j.prog, a, opts)
			if diags.HasErrors() {
				fmt.Fprint(stderr, diags.Errors().Render())
				m.Skipped = append(m.Skipped, Skipped{Flex: j.path, Attention: a.Name, Diagnostics: diags.Errors().Render()})
				if *strict {
					failed = true
				}
				continue
			}
			file := a.Name + ".cu"
			if count[a.Name] > 1 {
				file = strings.TrimSuffix(filepath.Base(j.path), ".flex") + "__" + file
			}
			if err := os.WriteFile(filepath.Join(*out, file), []byte(k.Source), 0o644); err != nil {
				fmt.Fprintln(stderr, err)
				return 1
			}
			if err := os.WriteFile(filepath.Join(*out, bwdFile(file)), []byte(k.BwdSource), 0o644); err != nil {
				fmt.Fprintln(stderr, err)
				return 1
			}
			m.Kernels = append(m.Kernels, manifestKernel(file, j.path, k, a, decision(j.plan, a.Name)))
		}
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // keep >= and & readable in the torch expressions
	enc.SetIndent("", "  ")
	err := enc.Encode(m)
	if err == nil {
		err = os.WriteFile(filepath.Join(*out, "manifest.json"), []byte(b.String()), 0o644)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %d kernels to %s (%d skipped)\n", len(m.Kernels), *out, len(m.Skipped))
	if failed {
		return 1
	}
	return 0
}

// bwdFile names the backward source beside a kernel's forward source.
func bwdFile(file string) string { return strings.TrimSuffix(file, ".cu") + ".bwd.cu" }

func decision(plan *classify.Plan, name string) *classify.Decision {
	for _, d := range plan.Attentions {
		if d.Name == name {
			return d
		}
	}
	return &classify.Decision{Pattern: "generated"}
}

func manifestKernel(file, source string, k *codegen.Kernel, a *check.Attention, d *classify.Decision) ManifestKernel {
	mk := ManifestKernel{
		Name: strings.TrimSuffix(file, ".cu"), Source: file, Flex: filepath.ToSlash(source), Attention: k.Name, Pattern: d.Pattern, Fallback: d.Fallback,
		Entry: k.Entry, FlagsEntry: k.FlagsEntry, HeadDim: k.HeadDim, DType: k.DType, Layout: k.Layout,
		Scale: k.Scale, KVHeads: k.KVHeads, Sparsity: k.Sparsity, SparsityReason: k.SparsityReason,
		HasMask: k.HasMask, HasScore: k.HasScore, MaskUsesB: k.MaskUsesB, MaskUsesH: k.MaskUsesH,
		Buffers: []ManifestBuffer{}, BlockM: k.BlockM, BlockN: k.BlockN, Threads: k.Threads,
		Launch: k.Launch, MaskTorch: k.MaskTorch, ScoreTorch: k.ScoreTorch,
		BwdSource: bwdFile(file), BwdEntries: codegen.BwdEntries, BwdBlockM: hipsrc.BwdBlockM, BwdBlockN: hipsrc.BwdBlockN,
		BwdSharedMemBytes: hipsrc.BwdSharedMemBytes(k.HeadDim),
	}
	if a.Sink != nil {
		mk.Sink = a.Sink.Name
	}
	grad := map[int]bool{}
	for _, b := range k.GradBuffers {
		grad[b.Slot] = true
	}
	for _, b := range k.Buffers {
		mk.Buffers = append(mk.Buffers, ManifestBuffer{Name: b.Name, Slot: b.Slot, DType: b.DType, Dims: b.Dims, Segments: b.Segments, Grad: grad[b.Slot]})
	}
	mk.ScoreGradReads = k.ScoreGradReads
	return mk
}
