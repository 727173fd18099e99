package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/maskc/maskc/classify"
	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/compiler"
	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/tilemap"
)

// runClassify implements `maskc classify FILE [--json] [--target T] [-D
// ...]`: per attention block, the Turbo call it becomes (or `generated`)
// and why.
func runClassify(e *env, args []string) int {
	fs := newFlagSet(e, "classify", "FILE [--json [--shape B,H,S,D [--sq N] [--skv N] [--buffer NAME=v0,...]... [--seed N]]] [--target T] [-D NAME=VALUE]...")
	asJSON := fs.Bool("json", false, "print the plan as JSON (the plan.json schema)")
	target, defines := targetFlag(fs), defineFlag(fs)
	shape := fs.String("shape", "", "with --json: add each generated block's tile counts for the launch `B,H,S,D` (classify/PLAN.md, tile_map)")
	tc := &runConfig{buffers: bufferFlags{}}
	fs.IntVar(&tc.sq, "sq", 0, "with --shape: query length (default S)")
	fs.IntVar(&tc.skv, "skv", 0, "with --shape: key/value length (default S)")
	fs.Var(tc.buffers, "buffer", "with --shape: contents of a captured buffer, row-major: `NAME=v0,v1,...` or NAME=@FILE (default random)")
	seed := fs.Uint64("seed", 1, "with --shape: random seed for buffers not given with --buffer")
	files, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(files) != 1 {
		return usageError(e.stderr, "classify takes exactly one FILE")
	}
	if *shape != "" && !*asJSON {
		return usageError(e.stderr, "--shape adds tile counts to the --json output; add --json")
	}
	if *shape == "" && (tc.sq != 0 || tc.skv != 0 || len(tc.buffers) > 0) {
		return usageError(e.stderr, "--sq, --skv and --buffer need --shape")
	}
	if *shape != "" {
		dims, err := parseShape(*shape)
		if err != nil {
			return usageError(e.stderr, "--shape %s: %v", *shape, err)
		}
		tc.b, tc.h, tc.d = dims[0], dims[1], dims[3]
		tc.sq, tc.skv = orDefault(tc.sq, dims[2]), orDefault(tc.skv, dims[2])
		if tc.sq < 1 || tc.skv < 1 {
			return usageError(e.stderr, "--sq and --skv must be positive")
		}
		if err := tilemap.CheckSize(int64(tc.b), int64(tc.h), int64(tc.sq), int64(tc.skv)); err != nil {
			return usageError(e.stderr, "%v", err)
		}
	}
	u, cu, status := buildPlan(e, files[0], *target, defines)
	if cu == nil {
		return status
	}
	plan := cu.Plan
	if *shape != "" {
		tc.path = files[0]
		tiles, status := tileCounts(e, u, cu, tc, *seed)
		if tiles == nil {
			return status
		}
		out, err := planWithFields(plan, "tile_map", tiles)
		if err != nil {
			fmt.Fprintf(e.stderr, "maskc: %v\n", err)
			return exitError
		}
		e.stdout.Write(out)
		return exitOK
	}
	if *asJSON {
		out, err := plan.JSON()
		if err != nil {
			fmt.Fprintf(e.stderr, "maskc: %v\n", err)
			return exitError
		}
		fmt.Fprintln(e.stdout, string(out))
	} else {
		fmt.Fprint(e.stdout, plan.Explain())
	}
	return status
}

// buildPlan runs the front end, the classifier and the code generator's
// checks on path (compiler.Decide: compiler.Verdict, as `maskc check`
// does), printing diagnostics. The Unit (of the plan, with the default
// kernel options: see Unit.WithKernel) is nil when there were errors
// (status says which exit code to use): every command gives a file check's
// verdict.
func buildPlan(e *env, path, target string, defines map[string]string) (*unit, *compiler.Unit, int) {
	profile, err := classify.Target(target)
	if err != nil {
		return nil, nil, usageError(e.stderr, "%v", err)
	}
	u, err := load(e, path, defines)
	if err != nil {
		fmt.Fprintf(e.stderr, "maskc: %v\n", err)
		return nil, nil, exitUsage
	}
	if u.diags.HasErrors() {
		printDiags(e.stderr, u.diags)
		return nil, nil, exitError
	}
	cu, cd := compiler.Decide(u.prog, compiler.Options{Target: profile})
	ds := append(u.diags, cd...)
	ds.Sort()
	printDiags(e.stderr, ds)
	if ds.HasErrors() {
		return nil, nil, exitError
	}
	return u, cu, exitOK
}

// runTargets implements `maskc targets`: the known Turbo target profiles.
func runTargets(e *env, args []string) int {
	fs := newFlagSet(e, "targets", "")
	if _, code, ok := parseArgs(fs, args); !ok {
		return code
	}
	for _, p := range classify.Targets() {
		def := ""
		if p.Name == classify.DefaultTarget.Name {
			def = " (default)"
		}
		fmt.Fprintf(e.stdout, "%s%s\n    %s\n", p.Name, def, p.Description)
	}
	return exitOK
}

// tileMapJSON is the tile_map object of a generated block (PLAN.md).
type tileMapJSON struct {
	Shape    map[string]int  `json:"shape"`
	Sparsity hipsrc.Sparsity `json:"sparsity"`
	// TileList is the kernel's tile list and TileListReason why it was
	// chosen (codegen.Kernel.TileList).
	TileList       codegen.TileList               `json:"tile_list"`
	TileListReason string                         `json:"tile_list_reason"`
	Pairs          int64                          `json:"pairs"`
	KeptPairs      int64                          `json:"kept_pairs"`
	Density        float64                        `json:"density"`
	Platforms      map[string]tileMapPlatformJSON `json:"platforms"`
}

// tileMapPlatformJSON is one platform's tiles in a tile_map.
type tileMapPlatformJSON struct {
	tileCountsJSON
	// Estimate is each tile list's cost at this launch in visited tiles
	// (tileEstimates).
	Estimate map[codegen.TileList]float64 `json:"estimate"`
	// Backward is the backward's column walk in its own tile
	// (tilemap.BwdCounts); absent for a pre-pass kernel.
	Backward *tileCountsJSON `json:"backward,omitempty"`
}

// tileCountsJSON is one walk's tiles on one platform: the tile's size, the
// tiles of the launch, those the walk visits, those holding a kept pair and
// the full ones.
type tileCountsJSON struct {
	BlockM   int64 `json:"block_m"`
	BlockN   int64 `json:"block_n"`
	Tiles    int64 `json:"tiles"`
	Visited  int64 `json:"tiles_visited"`
	WithKept int64 `json:"tiles_with_kept_pairs"`
	Full     int64 `json:"full_tiles"`
}

// estimateLine prints the tile list chosen and tileEstimates' costs
// (the launch's, all slices), the chosen list first.
func estimateLine(kind codegen.TileList, est map[codegen.TileList]float64) string {
	parts := []string{fmt.Sprintf("%s %.0f", kind, est[kind])}
	for _, k := range []codegen.TileList{codegen.TileListDataDriven, codegen.TileListAnalytic, codegen.TileListPrepass} {
		if v, ok := est[k]; ok && k != kind {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, v))
		}
	}
	return fmt.Sprintf("tile list %s; estimated cost of the launch in visited tiles: %s", kind, strings.Join(parts, ", "))
}

// tileEstimates is the cost model of codegen.Kernel.TileList at one
// launch, in visited tiles: the chosen list's visits (plus its flags for
// the pre-pass), the pre-pass's flags (codegen.PrepassTileCost each) plus
// the tiles holding a kept pair, and for a data-driven or pre-pass list
// the analytic list's visits where there is one (alt, tilemap.VisitedTiles
// of Kernel.AnalyticAlternative; -1: none).
func tileEstimates(kind codegen.TileList, c tilemap.Counts, shared, alt int64) map[codegen.TileList]float64 {
	prepass := float64(c.WithKept) + codegen.PrepassTileCost*float64(c.Tiles/shared)
	est := map[codegen.TileList]float64{codegen.TileListPrepass: prepass}
	if alt >= 0 && (kind == codegen.TileListDataDriven || kind == codegen.TileListPrepass) {
		est[codegen.TileListAnalytic] = float64(alt)
	}
	switch kind {
	case codegen.TileListDataDriven:
		est[kind] = float64(c.Visited)
	case codegen.TileListAnalytic, codegen.TileListNone:
		est[kind] = float64(c.Visited)
	}
	return est
}

// tileCounts computes the tile_map of every block the plan runs (or may
// run) as a generated kernel, for the launch cfg describes. It returns nil
// and an exit status on errors.
func tileCounts(e *env, u *unit, cu *compiler.Unit, cfg *runConfig, seed uint64) (map[string]any, int) {
	plan, unit := cu.Plan, cu.WithKernel(codegen.Options{SourceName: cfg.path})
	out := map[string]any{}
	var names []string
	for _, d := range plan.Attentions {
		if compiler.NeedsKernel(d) {
			names = append(names, d.Name)
		}
	}
	prog := newProgress(e, "tile counts")
	defer prog.done()
	for i, name := range names {
		prog.update(i, len(names), name)
		k, kd := unit.Kernel(name)
		if kd.HasErrors() {
			printDiags(e.stderr, kd)
			return nil, exitError
		}
		c := *cfg
		c.hkv = orDefault(k.KVHeads, c.h)
		env, err := sliceEnv(discardStdout(e), &c, u.prog, k, seed)
		if err != nil {
			return nil, printRunError(e, err)
		}
		r, _, err := unit.TileCounts(name, env, hipsrc.Platforms...)
		if r != nil {
			for _, n := range r.Notes {
				fmt.Fprintf(e.stderr, "maskc: note: attention %s: %s\n", name, n)
			}
		}
		if err != nil {
			return nil, printEvalError(e, u, err)
		}
		kind, why := k.TileList()
		alt := make([]int64, len(r.Counts))
		for i := range alt {
			alt[i] = -1
		}
		if ak := k.AnalyticAlternative(); ak != nil {
			v, err := tilemap.VisitedTiles(ak, env, hipsrc.Platforms)
			if err != nil {
				return nil, printEvalError(e, u, err)
			}
			copy(alt, v)
		}
		var bwd []tilemap.Counts
		if k.Sparsity != hipsrc.SparsityPrepass {
			ps := make([]hipsrc.Platform, len(r.Counts))
			for i, ct := range r.Counts {
				ps[i] = ct.Platform
			}
			if bwd, err = tilemap.BwdCounts(k, env, ps); err != nil {
				return nil, printEvalError(e, u, err)
			}
		}
		tm := tileMapJSON{Shape: map[string]int{"B": c.b, "H": c.h, "Sq": c.sq, "Skv": c.skv}, Sparsity: k.Sparsity, TileList: kind, TileListReason: why, Platforms: map[string]tileMapPlatformJSON{}}
		for _, ct := range r.Counts {
			if msg := ct.Waste.Loose(ct.Counts); msg != "" {
				fmt.Fprintf(e.stderr, "maskc: warning: attention %s: at B=%d H=%d Sq=%d Skv=%d the %s kernel %s\n", name, c.b, c.h, c.sq, c.skv, ct.Platform, msg)
			}
		}
		for i, ct := range r.Counts {
			tm.Pairs, tm.KeptPairs, tm.Density = ct.Pairs, ct.KeptPairs, ct.Density
			pj := tileMapPlatformJSON{
				tileCountsJSON: tileCountsJSON{BlockM: hipsrc.BlockM, BlockN: int64(ct.Platform.BlockN()), Tiles: ct.Tiles, Visited: ct.Visited, WithKept: ct.WithKept, Full: ct.Full},
				Estimate:       tileEstimates(kind, ct.Counts, tilemap.SharedSlices(k, env), alt[i])}
			if bwd != nil {
				tile := k.BwdLaunch[ct.Platform.String()] // BwdCounts found it
				b := bwd[i]
				pj.Backward = &tileCountsJSON{BlockM: int64(tile.BlockM), BlockN: int64(tile.BlockN), Tiles: b.Tiles, Visited: b.Visited, WithKept: b.WithKept, Full: b.Full}
			}
			tm.Platforms[ct.Platform.String()] = pj
		}
		out[name] = tm
	}
	return out, exitOK
}

// discardStdout returns e with stdout discarded (the JSON owns stdout).
func discardStdout(e *env) *env {
	return &env{stdin: e.stdin, stdout: io.Discard, stderr: e.stderr}
}

// planWithFields returns the plan's JSON with the field key added to the
// decision of each block named in values.
func planWithFields(plan *classify.Plan, key string, values map[string]any) ([]byte, error) {
	raw, err := plan.JSON()
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	atts, _ := doc["attentions"].([]any)
	for _, a := range atts {
		m, _ := a.(map[string]any)
		if name, _ := m["name"].(string); values[name] != nil {
			m[key] = values[name]
		}
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	return append(out, '\n'), err
}
