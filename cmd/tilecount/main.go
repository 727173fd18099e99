// Command tilecount prints, for every attention block of the given .flex
// files, the tiles its generated forward kernel visits on one platform and
// the tiles holding a kept pair (package tilemap), for one launch shape and
// given buffer contents: the exact denominators of gpu/bench_ext.py's
// "tiles visited / tiles with a kept pair" column.
//
// Usage: tilecount -shape B,H,Sq,Skv [-platform nvidia-sm90a] [-buffers FILE.json] FILE.flex...
//
// FILE.json maps FLEX:ATTENTION (FLEX the .flex file's base name) to the
// attention's buffers: {"document:document": {"doc": {"dims": [8192],
// "data": [0, 0, ...]}}}; a buffer left out is an error. One JSON object per
// attention goes to stdout.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/maskc/maskc/compiler"
	"github.com/maskc/maskc/eval"
	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/tilemap"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// buffer is one buffer's contents in the -buffers file.
type buffer struct {
	Dims []int     `json:"dims"`
	Data []float64 `json:"data"`
}

// row is one attention's output line.
type row struct {
	Name     string          `json:"name"`
	Flex     string          `json:"flex"`
	Sparsity hipsrc.Sparsity `json:"sparsity"`
	Platform string          `json:"platform"`
	tilemap.Counts
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tilecount", flag.ContinueOnError)
	fs.SetOutput(stderr)
	shape := fs.String("shape", "", "launch shape B,H,Sq,Skv (required)")
	plat := fs.String("platform", hipsrc.NVIDIAWGMMA.String(), "platform whose tile sizes count")
	bufPath := fs.String("buffers", "", "JSON file of buffer contents by attention name")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var B, H, Sq, Skv int64
	if n, err := fmt.Sscanf(*shape, "%d,%d,%d,%d", &B, &H, &Sq, &Skv); err != nil || n != 4 || B < 1 || H < 1 || Sq < 1 || Skv < 1 {
		fmt.Fprintln(stderr, "tilecount: -shape B,H,Sq,Skv with positive sizes is required")
		return 2
	}
	var platform hipsrc.Platform
	found := false
	for _, p := range hipsrc.Platforms {
		if p.String() == *plat {
			platform, found = p, true
		}
	}
	if !found {
		fmt.Fprintf(stderr, "tilecount: unknown platform %q\n", *plat)
		return 2
	}
	bufs := map[string]map[string]buffer{}
	if *bufPath != "" {
		b, err := os.ReadFile(*bufPath)
		if err == nil {
			err = json.Unmarshal(b, &bufs)
		}
		if err != nil {
			fmt.Fprintln(stderr, "tilecount:", err)
			return 1
		}
	}
	enc := json.NewEncoder(stdout)
	for _, path := range fs.Args() {
		text, err := compiler.ReadFile(path)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		unit, diags := compiler.Prepare(path, text, compiler.Options{})
		if unit == nil {
			fmt.Fprint(stderr, diags.Errors().Render())
			return 1
		}
		for _, name := range unit.Names() {
			k, kd := unit.Kernel(name)
			if kd.HasErrors() {
				fmt.Fprint(stderr, kd.Errors().Render())
				return 1
			}
			env := &eval.Env{B: B, H: H, HKV: H, Q: Sq, KV: Skv, Buffers: map[string]*eval.Tensor{}}
			for _, kb := range k.Buffers {
				key := strings.TrimSuffix(filepath.Base(path), ".flex") + ":" + name
				given, ok := bufs[key][kb.Name]
				if !ok {
					fmt.Fprintf(stderr, "tilecount: %s: no contents for buffer %s in %s\n", key, kb.Name, *bufPath)
					return 1
				}
				t := eval.NewTensor(given.Dims...)
				if len(given.Data) != len(t.Data) {
					fmt.Fprintf(stderr, "tilecount: %s: buffer %s has %d values for dims %v\n", name, kb.Name, len(given.Data), given.Dims)
					return 1
				}
				copy(t.Data, given.Data)
				env.Buffers[kb.Name] = t
			}
			r, _, err := unit.TileCounts(name, env, platform)
			if err != nil {
				fmt.Fprintf(stderr, "tilecount: %s: %v\n", name, err)
				return 1
			}
			ct := r.Counts[0].Counts
			if err := enc.Encode(row{Name: name, Flex: path, Sparsity: k.Sparsity, Platform: platform.String(), Counts: ct}); err != nil {
				fmt.Fprintln(stderr, err)
				return 1
			}
		}
	}
	return 0
}
