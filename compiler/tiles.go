package compiler

import (
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/eval"
	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/tilemap"
)

// The tile-count entry: every count or picture of the tiles a generated
// kernel visits (`maskc classify --shape`, `maskc draw`, cmd/tilecount and
// the language server's pictures) is of the Unit's kernel of the block
// (Unit.Kernel, generated once), for one launch env describes: its sizes
// and buffer contents. A caller that builds env from the kernel's buffers
// asks Unit.Kernel first; that kernel is the one counted.

// TileCount is one platform's counts of a launch.
type TileCount struct {
	// Platform is the platform whose tile sizes count.
	Platform hipsrc.Platform
	tilemap.Counts
	// Waste says which of the mask's terms reach the tiles visited
	// without a kept pair (Waste.Loose words the warning).
	Waste tilemap.Waste
}

// TileReport is what TileCounts found for one block and launch.
type TileReport struct {
	// Notes are the remarks on env's buffers (tilemap.Notes).
	Notes []string
	// Counts are the whole launch's counts, one per platform asked for,
	// in that order.
	Counts []TileCount
}

// TileCounts counts the tiles the generated forward kernel of block name
// visits and the tiles holding a kept pair, over every (b, h) slice of the
// launch env describes, on each of platforms. The diagnostics are
// Unit.Kernel's (errors: no kernel, nil report). The error is the
// evaluation's (a buffer value out of range, ...); the notes found before
// it are in the report, which is then not nil.
func (u *Unit) TileCounts(name string, env *eval.Env, platforms ...hipsrc.Platform) (*TileReport, dsl.Diagnostics, error) {
	k, diags := u.Kernel(name)
	if diags.HasErrors() {
		return nil, diags, nil
	}
	notes, err := tilemap.Notes(k, env)
	if err != nil {
		return nil, diags, err
	}
	r := &TileReport{Notes: notes}
	cts, waste, err := tilemap.LaunchWaste(k, env, platforms)
	if err != nil {
		return r, diags, err
	}
	for i, p := range platforms {
		r.Counts = append(r.Counts, TileCount{Platform: p, Counts: cts[i], Waste: waste[i]})
	}
	return r, diags, nil
}

// TileMap builds the tile map of one (b, h) slice of the launch env
// describes (opts: the platform, the slice, the grid of a picture), as
// `maskc draw` and the language server draw it. The diagnostics and the
// error are as for TileCounts.
func (u *Unit) TileMap(name string, env *eval.Env, opts tilemap.Options) (*tilemap.Map, dsl.Diagnostics, error) {
	k, diags := u.Kernel(name)
	if diags.HasErrors() {
		return nil, diags, nil
	}
	m, err := tilemap.Build(k, env, opts)
	return m, diags, err
}
