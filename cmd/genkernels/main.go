// Command genkernels writes the generated HIP kernel of every attention
// block of the given .flex files, and a manifest describing them for GPU
// test harnesses:
//
//	go run ./cmd/genkernels -o DIR [-D NAME=VALUE]... [-head-dim N] [-dtype bf16|fp16] [-layout bshd|bhsd] FILE.flex...
//
// DIR/<attention>.cu is the full self-contained source (prefixed with the
// file's base name when two files declare the same attention name) and
// DIR/manifest.json (hipsrc/MANIFEST.md) the kernel ABI and, per kernel, its
// name and source file, the attention block and .flex file it came from,
// the configuration, the block sparsity, the captured buffers in
// MaskcBuffers order, the launch per platform and the mask and score as
// PyTorch expressions. DIR is written as `maskc compile -o` writes its
// (compiler.WriteDir): staged and committed whole, replacing only
// genkernels' own earlier outputs. Attention blocks that cannot be generated
// are reported on stderr and listed under "skipped"; with -strict they make
// the command fail.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/compiler"
	"github.com/maskc/maskc/hipsrc"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

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
	fs.IntVar(&opts.HeadDim, "head-dim", 0, "head dimension, 64, 128 or 256 (default: the block's head_dim, else 128)")
	fs.StringVar(&opts.DType, "dtype", "", "bf16 or fp16 (default: the block's dtype, else bf16)")
	fs.StringVar(&opts.Layout, "layout", "", "bshd or bhsd (default: the block's layout, else bshd)")
	fs.BoolVar(&opts.BwdDQOrder, "bwd-dq-order", false, "experiment: the deterministic backward of masks whose columns start on a diagonal, and of every kernel on the warp-specialized backward, adds dQ in order in maskc_attn_bwd_ordered (sm_90a) instead of the dQ kernel (codegen.Options.BwdDQOrder)")
	fs.BoolVar(&opts.BwdWS, "bwd-ws", false, "experiment: every sm_90a backward at head dim 128 is the warp-specialized kernel (a producer warpgroup with a dQ writer, two consumer warpgroups on 128 keys), as for kernels without a mask or whose columns run to the last row or are long (codegen.Options.BwdWS)")
	fs.BoolVar(&opts.WSWalks, "ws-walks", false, "experiment: every walked analytic mask on the warp-specialized sm_90a forward, not only block selections (codegen.Options.WSWalks)")
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
	type job struct {
		path string
		unit *compiler.Unit
	}
	var jobs []job
	count := map[string]int{}
	failed := false
	copts := compiler.Options{Defines: defs, Kernel: opts}
	for _, path := range fs.Args() {
		text, err := compiler.ReadFile(path)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		u, diags := compiler.Prepare(path, text, copts)
		if u == nil {
			fmt.Fprint(stderr, diags.Errors().Render())
			failed = true
			continue
		}
		jobs = append(jobs, job{path, u})
		for _, a := range u.Program.Attentions {
			count[a.Name]++
		}
	}
	m := hipsrc.NewManifest()
	// Written like `maskc compile -o`: staged, committed whole, and only
	// over genkernels' own earlier outputs (compiler.WriteDir).
	err := compiler.WriteDir(*out, "genkernels", func(dir *compiler.OutDir) error {
		for _, j := range jobs {
			for _, name := range j.unit.Names() {
				k, diags := j.unit.Kernel(name)
				if diags.HasErrors() {
					fmt.Fprint(stderr, diags.Errors().Render())
					m.Skipped = append(m.Skipped, hipsrc.Skipped{Flex: j.path, Attention: name, Diagnostics: diags.Errors().Render()})
					if *strict {
						failed = true
					}
					continue
				}
				file := name + ".cu"
				if count[name] > 1 {
					file = strings.TrimSuffix(filepath.Base(j.path), ".flex") + "__" + file
				}
				mk, err := dir.WriteKernel(k, j.unit.Decision(name), file, j.path)
				if err != nil {
					return err
				}
				m.Kernels = append(m.Kernels, mk)
			}
		}
		b, err := m.Marshal()
		if err != nil {
			return err
		}
		return dir.WriteFile(hipsrc.ManifestFile, b)
	})
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
