package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/draw"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/eval"
	"github.com/maskc/maskc/harness"
	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/runtime/host"
	"github.com/maskc/maskc/tilemap"
)

// maxPrepassPairs bounds Sq * Skv for pre-pass kernels, whose every pair
// is evaluated (minutes on a few cores there); other kernels evaluate the
// pairs of partial tiles only, within tilemap.MaxPairs.
const maxPrepassPairs = 1 << 32

// runDraw implements `maskc draw FILE --attention NAME --shape B,H,S,D -o
// out.svg|out.png`: the kept pairs of one (b, h) slice beside the tile map
// the generated kernel uses for that shape on a platform, with the counts.
func runDraw(e *env, args []string) int {
	fs := newFlagSet(e, "draw", "FILE --attention NAME --shape B,H,S,D -o OUT.svg|OUT.png [--sq N] [--skv N] [--b B] [--h H] [--platform amd|nvidia|nvidia-sm90a] [--size 512] [--buffer NAME=v0,...]... [--seed N] [-D NAME=VALUE]...")
	cfg := &runConfig{defines: defineFlags{}, buffers: bufferFlags{}}
	fs.StringVar(&cfg.attention, "attention", "", "attention block to draw (may be left out when the file has one)")
	shape := fs.String("shape", "", "problem size `B,H,S,D`: batch, query heads, sequence length, head dimension")
	out := fs.String("o", "", "output file: .svg or .png")
	fs.IntVar(&cfg.sq, "sq", 0, "query length (default S)")
	fs.IntVar(&cfg.skv, "skv", 0, "key/value length (default S)")
	sb := fs.Int("b", 0, "batch index of the slice drawn")
	sh := fs.Int("h", 0, "head index of the slice drawn")
	platform := fs.String("platform", hipsrc.AMD.String(), "platform whose kernel tiles are drawn: amd, nvidia or nvidia-sm90a")
	size := fs.Int("size", draw.MaxCells, "longest side of a panel, in cells (pairs are summed into cells above it)")
	seed := fs.Uint64("seed", 1, "random seed for buffers not given with --buffer")
	fs.StringVar(&cfg.target, "target", "", "Turbo target profile for the plan (see 'maskc targets')")
	fs.Var(cfg.defines, "D", "override a param: `NAME=VALUE` (repeatable)")
	fs.Var(cfg.buffers, "buffer", "contents of a captured buffer, row-major: `NAME=v0,v1,...` or NAME=@FILE (repeatable; default random)")
	files, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(files) != 1 || *out == "" || *shape == "" {
		return usageError(e.stderr, "draw takes one FILE, --shape B,H,S,D and -o OUT.svg|OUT.png")
	}
	cfg.path = files[0]
	ext := strings.ToLower(filepath.Ext(*out))
	if ext != ".svg" && ext != ".png" {
		return usageError(e.stderr, "-o %s: the picture is written as .svg or .png", *out)
	}
	p, ok := platformByName(*platform)
	if !ok {
		return usageError(e.stderr, "--platform %s: want amd, nvidia or nvidia-sm90a", *platform)
	}
	dims, err := parseShape(*shape)
	if err != nil {
		return usageError(e.stderr, "--shape %s: %v", *shape, err)
	}
	cfg.b, cfg.h, cfg.d = dims[0], dims[1], dims[3]
	cfg.sq, cfg.skv = orDefault(cfg.sq, dims[2]), orDefault(cfg.skv, dims[2])
	switch {
	case !hipsrc.HeadDimSupported(cfg.d):
		return usageError(e.stderr, "head dimension D = %d: generated kernels support %s", cfg.d, hipsrc.HeadDimList())
	case cfg.sq < 1 || cfg.skv < 1:
		return usageError(e.stderr, "--sq and --skv must be positive")
	case tilemap.CheckSize(1, 1, int64(cfg.sq), int64(cfg.skv)) != nil:
		return usageError(e.stderr, "%v", tilemap.CheckSize(1, 1, int64(cfg.sq), int64(cfg.skv)))
	case *sb < 0 || *sb >= cfg.b || *sh < 0 || *sh >= cfg.h:
		return usageError(e.stderr, "--b %d --h %d: the slice must lie in B = %d, H = %d", *sb, *sh, cfg.b, cfg.h)
	case *size < 8 || *size > 4096:
		return usageError(e.stderr, "--size must be between 8 and 4096")
	}
	u, cu, status := buildPlan(e, cfg.path, cfg.target, cfg.defines)
	if cu == nil {
		return status
	}
	plan := cu.Plan
	a, _, code, ok := pickAttention(e, cfg, u, plan)
	if !ok {
		return code
	}
	if a.HeadDim != 0 && a.HeadDim != cfg.d {
		return usageError(e.stderr, "--shape gives D = %d, but attention %s declares head_dim = %d", cfg.d, a.Name, a.HeadDim)
	}
	cfg.hkv = orDefault(a.KVHeads, cfg.h)
	unit := cu.WithKernel(codegen.Options{HeadDim: cfg.d, SourceName: cfg.path})
	k, kd := unit.Kernel(a.Name)
	if kd.HasErrors() {
		printDiags(e.stderr, kd)
		return exitError
	}
	if pairs := int64(cfg.sq) * int64(cfg.skv); k.Sparsity == codegen.SparsityPrepass && pairs > maxPrepassPairs {
		return usageError(e.stderr, "attention %s uses the pre-pass, which evaluates the mask on every pair: Sq * Skv = %d is above %d", a.Name, pairs, int64(maxPrepassPairs))
	}
	env, err := sliceEnv(e, cfg, u.prog, k, *seed)
	if err != nil {
		return printRunError(e, err)
	}
	grid, scale := draw.Grid(int64(cfg.sq), int64(cfg.skv), *size)
	prog := newProgress(e, "draw "+a.Name)
	t0 := time.Now()
	m, _, err := unit.TileMap(a.Name, env, tilemap.Options{Platform: p, B: int64(*sb), H: int64(*sh), Grid: &grid,
		Progress: func(done, total int) { prog.update(done, total, "q tiles") }})
	prog.done()
	if err != nil {
		return printEvalError(e, u, err)
	}
	for _, n := range m.Notes {
		fmt.Fprintf(e.stderr, "maskc: note: %s\n", n)
	}
	// The launch's waste, as classify --shape warns of it.
	cts, waste, err := tilemap.LaunchWaste(k, env, []hipsrc.Platform{p})
	if err != nil {
		return printEvalError(e, u, err)
	}
	if msg := waste[0].Loose(cts[0]); msg != "" {
		fmt.Fprintf(e.stderr, "maskc: warning: attention %s: at B=%d H=%d Sq=%d Skv=%d the %s kernel %s\n", a.Name, cfg.b, cfg.h, cfg.sq, cfg.skv, p, msg)
	}
	kind, _ := k.TileList()
	alt := int64(-1)
	if ak := k.AnalyticAlternative(); ak != nil {
		v, err := tilemap.VisitedTiles(ak, env, []hipsrc.Platform{p})
		if err != nil {
			return printEvalError(e, u, err)
		}
		alt = v[0]
	}
	estimate := estimateLine(kind, tileEstimates(kind, cts[0], tilemap.SharedSlices(k, env), alt))
	title := fmt.Sprintf("%s: attention %s, B=%d H=%d Sq=%d Skv=%d D=%d", filepath.Base(cfg.path), a.Name, cfg.b, cfg.h, cfg.sq, cfg.skv, cfg.d)
	c, err := draw.Layout(draw.Picture{Map: m, Scale: scale, Title: title, Lines: []string{estimate}})
	if err != nil {
		return printRunError(e, err)
	}
	var buf bytes.Buffer
	if ext == ".svg" {
		err = c.SVG(&buf)
	} else {
		err = c.PNG(&buf)
	}
	if err != nil {
		return printRunError(e, err)
	}
	if err := writeNew(*out, buf.Bytes()); err != nil {
		fmt.Fprintf(e.stderr, "maskc: %v\n", err)
		return exitUsage
	}
	ct := m.Counts
	fmt.Fprintf(e.stdout, "attention %s: sparsity %s, %s tiles %dx%d, slice b=%d h=%d\n", a.Name, k.Sparsity, p, m.BlockM, m.BlockN, *sb, *sh)
	fmt.Fprintf(e.stdout, "kept pairs %d of %d (density %.4f)\n", ct.KeptPairs, ct.Pairs, ct.Density)
	fmt.Fprintf(e.stdout, "tiles %d: visited %d, with kept pairs %d, full %d\n", ct.Tiles, ct.Visited, ct.WithKept, ct.Full)
	fmt.Fprintln(e.stdout, estimate)
	fmt.Fprintf(e.stdout, "wrote %s (%dx%d pixels, %s)\n", *out, c.W, c.H, ms(time.Since(t0)))
	return exitOK
}

// platformByName finds a hipsrc platform by its String.
func platformByName(name string) (hipsrc.Platform, bool) {
	for _, p := range hipsrc.Platforms {
		if p.String() == name {
			return p, true
		}
	}
	return 0, false
}

// sliceEnv returns the sizes and the buffers the kernel's mask reads (a
// score's only where --buffer gives it: no tile map reads one):
// given with --buffer, else drawn as `maskc run` draws them.
func sliceEnv(e *env, cfg *runConfig, prog *check.Program, k *codegen.Kernel, seed uint64) (*eval.Env, error) {
	env := &eval.Env{B: int64(cfg.b), H: int64(cfg.h), HKV: int64(cfg.hkv), Q: int64(cfg.sq), KV: int64(cfg.skv), Buffers: map[string]*eval.Tensor{}}
	for name := range cfg.buffers {
		if !slices.ContainsFunc(k.Buffers, func(b codegen.BufferABI) bool { return b.Name == name }) {
			return nil, fmt.Errorf("--buffer %s: attention %s reads no buffer %s", name, k.Name, name)
		}
	}
	rng := harness.NewRand(seed)
	sizes := map[dsl.Var]int64{dsl.SizeB: env.B, dsl.SizeH: env.H, dsl.SizeHKV: env.HKV, dsl.SizeQ: env.Q, dsl.SizeKV: env.KV}
	for _, kb := range k.Buffers {
		if _, given := cfg.buffers[kb.Name]; !given && !maskReads(k, kb.Name) {
			continue // a score's buffer: the tile map never reads it (a 4-D bias at S = 8192 is 67M values)
		}
		b := prog.Buffer(kb.Name)
		if b == nil {
			return nil, fmt.Errorf("buffer %s of the kernel is not declared in the program", kb.Name)
		}
		dims, vals, how, err := bufferValues(cfg, b, sizes, rng)
		if err != nil {
			return nil, err
		}
		if _, given := cfg.buffers[b.Name]; !given {
			how += ", --seed " + strconv.FormatUint(seed, 10)
		}
		_, seen, err := host.EncodeBuffer(b.DType, vals)
		if err != nil {
			return nil, fmt.Errorf("buffer %s: %v", b.Name, err)
		}
		env.Buffers[b.Name] = &eval.Tensor{Dims: dims, Data: seen}
		fmt.Fprintf(e.stdout, "buffer %s %s%v: %s\n", b.Name, b.DType, dims, harness.Describe(seen, how, b.Segments, dims, maxShownValues))
	}
	return env, nil
}

// maskReads reports whether the kernel's mask reads buffer name.
func maskReads(k *codegen.Kernel, name string) bool {
	if k.Mask == nil {
		return false
	}
	return slices.ContainsFunc(k.Mask.Buffers, func(d *dsl.BufferDecl) bool { return d.Name.Name == name })
}

// printEvalError prints an evaluation error at its position in the file
// when it has one.
func printEvalError(e *env, u *unit, err error) int {
	if ee, ok := err.(*eval.Error); ok && u.prog != nil && u.prog.File != nil {
		fmt.Fprintf(e.stderr, "maskc: %s\n", ee.Locate(u.prog.File.Source))
		return exitError
	}
	return printRunError(e, err)
}
