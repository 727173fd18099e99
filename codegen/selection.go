package codegen

import (
	"fmt"
	"strings"

	"github.com/maskc/maskc/buftype"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/normal"
)

// This file handles block selection (MoBA, NSA's selected branch): a
// term's atom `buf[...] == kv // B` whose buffer index reads neither kv
// nor q other than through one quotient q // D. Over the rows of a q
// tile the read takes one value per D-row block of q, and each value v
// gives the kv interval [B*v, B*v + B) directly, so the row walk visits
// the selected kv blocks instead of the whole range the term's other
// bounds leave (for MoBA, every earlier key). The atom is still evaluated
// per element inside a visited tile (it stays in the walk's loose list);
// only the kv intervals (maskc_kv_intervals and HostSparsity.KVIntervals)
// use it.

// maxSelIntervals bounds maskc_kv_interval_count where terms select kv
// blocks from a buffer (one interval per read): masks needing more take
// the walk without selections.
const maxSelIntervals = 24

// selTileRows is the q tile height the number of reads per tile is sized
// for (MASKC_BLOCK_M on every platform); a taller row range spanning more
// D-row blocks than that takes the term's range without the selection.
const selTileRows = 128

// maxSelReads bounds the reads per term and tile.
const maxSelReads = 4

// selStep is a selection atom of a term, `val == kv // blk`.
type selStep struct {
	val  dsl.Expr // an int buffer read free of kv; it reads q only as q // qDiv
	blk  int64    // B >= 1
	qDiv int64    // D >= 1, 0 when val does not read q
	text string   // the atom
}

// reads is how many reads of val a tile of selTileRows rows (starting at a
// multiple of selTileRows) takes: the D-row blocks it can meet.
func (s *selStep) reads() int {
	switch {
	case s.qDiv == 0:
		return 1
	case selTileRows%s.qDiv == 0:
		return selTileRows / int(s.qDiv)
	case s.qDiv%selTileRows == 0:
		return 1
	}
	return min(maxSelReads+1, selTileRows/int(s.qDiv)+2)
}

// selectionAtom recognises `buf[...] == kv // B` (either way round, B a
// positive constant or kv itself for B = 1) over an integer buffer whose
// indices read neither kv nor q outside one quotient q // D; nil for any
// other atom.
func selectionAtom(a *normal.Atom, byName map[string]*BufferABI) *selStep {
	if a.Kind != normal.AtomOpaque || a.Neg {
		return nil
	}
	c, ok := dsl.Unparen(a.Expr).(*dsl.CompareExpr)
	if !ok || len(c.Ops) != 1 || c.Ops[0] != dsl.OpEQ {
		return nil
	}
	for k := 0; k < 2; k++ {
		blk, ok := kvBlock(c.Operands[k])
		if !ok {
			continue
		}
		val := dsl.Unparen(c.Operands[1-k])
		rd, ok := val.(*dsl.IndexExpr)
		if !ok {
			return nil
		}
		id, ok := rd.X.(*dsl.Ident)
		if !ok || byName[id.Name] == nil || !buftype.IsInt(byName[id.Name].DType) {
			return nil
		}
		d, ok := qQuotient(rd)
		if !ok || d > selTileRows*maxSelReads {
			return nil
		}
		s := &selStep{val: rd, blk: blk, qDiv: d, text: a.Text}
		if s.reads() > maxSelReads {
			return nil
		}
		return s
	}
	return nil
}

// kvBlock matches `kv // B` (B a positive constant below coefLimit) or `kv`.
func kvBlock(e dsl.Expr) (int64, bool) {
	e = dsl.Unparen(e)
	if v, ok := e.(*dsl.VarRef); ok && v.Var == dsl.VarKV {
		return 1, true
	}
	x, ok := e.(*dsl.BinaryExpr)
	if !ok || x.Op != dsl.OpFloorDiv {
		return 0, false
	}
	v, ok := dsl.Unparen(x.X).(*dsl.VarRef)
	n, ok2 := dsl.Unparen(x.Y).(*dsl.IntLit)
	if !ok || !ok2 || v.Var != dsl.VarKV || n.Value < 1 || n.Value >= coefLimit {
		return 0, false
	}
	return n.Value, true
}

// qQuotient reports whether e reads no kv and no q outside quotients q //
// D of one divisor D (returned; 0 when q is not read), and no score.
func qQuotient(e dsl.Expr) (int64, bool) {
	var d int64
	ok := true
	dsl.Inspect(e, func(x dsl.Expr) bool {
		if !ok {
			return false
		}
		if b, isDiv := x.(*dsl.BinaryExpr); isDiv && b.Op == dsl.OpFloorDiv {
			v, isVar := dsl.Unparen(b.X).(*dsl.VarRef)
			n, isLit := dsl.Unparen(b.Y).(*dsl.IntLit)
			if isVar && isLit && v.Var == dsl.VarQ && n.Value >= 1 {
				if d != 0 && d != n.Value {
					ok = false
				}
				d = n.Value
				return false
			}
		}
		if v, isVar := x.(*dsl.VarRef); isVar && (v.Var == dsl.VarQ || v.Var == dsl.VarKV || v.Var == dsl.VarScore) {
			ok = false
		}
		return true
	})
	return d, ok
}

// selIntervals reports whether the plan's row walk takes selections: it is
// analytic and its terms' selections fit (selFit). It returns the number
// of intervals.
func selIntervals(p sparsityPlan) (int, bool) {
	if p.kind != SparsityAnalytic {
		return 0, false
	}
	return selFit(p)
}

// selFit reports whether an analytic walk of the plan's terms would take
// their selections: some term has one, and the intervals number at most
// maxSelIntervals. It returns the number of intervals, one per term
// without a selection and reads() per term with one. choose asks it before
// the plan's kind is set.
func selFit(p sparsityPlan) (int, bool) {
	if len(p.disjuncts) == 0 {
		return 0, false
	}
	n, any := 0, false
	for _, d := range p.disjuncts {
		n += d.selSlots()
		any = any || d.kv.sel != nil
	}
	return n, any && n <= maxSelIntervals
}

// selSlots is how many slots of maskc_kv_intervals the term takes in a
// walk with selections: reads() with a selection, else one.
func (d *disjunctPlan) selSlots() int {
	if d.kv.sel != nil {
		return d.kv.sel.reads()
	}
	return 1
}

// selCode prints the intervals slot .. slot+reads()-1 of a term with a
// selection: the read at the first row of each D-row block of the tile's
// rows [qa, qb], its kv block [B*v, B*v + B) met with [ka, kb]; where the
// rows meet more blocks than there are reads, slot's interval is [ka, kb]
// and the others empty. A value outside [0, ceil(KV/B)) selects no kv.
//
// Every read is made before the tests that use it, with no branch around
// it (the reads check their indices, so a row outside the tile reads
// nothing out of bounds): the reads of all terms are then in flight
// together instead of each waiting for the branch before it.
func (g *sparsityWriter) selCode(s *selStep, n walkNames, slot int) {
	k := s.reads()
	fits, why := "true", "one read (the index reads no q)"
	if s.qDiv != 0 {
		fits = fmt.Sprintf("maskc_py_floordiv(%s, %s) - maskc_py_floordiv(%s, %s) < %d", n.qb, intLit(s.qDiv), n.qa, intLit(s.qDiv), k)
		why = fmt.Sprintf("one read per %d-row block of q, at most %d", s.qDiv, k)
	}
	some := fmt.Sprintf("%s && %s <= %s && %s <= %s", n.live, n.qa, n.qb, n.ka, n.kb)
	g.line("// kv blocks selected by %s: %s", s.text, why)
	g.line("const bool fits%d = %s;", slot, fits)
	for j := 0; j < k; j++ {
		i := slot + j
		qj := n.qa
		if s.qDiv != 0 {
			qj = fmt.Sprintf("maskc_py_max(%s, (maskc_py_floordiv(%s, %s) + %d) * %s)", n.qa, n.qa, intLit(s.qDiv), j, intLit(s.qDiv))
		}
		g.selRead(s, qj, i, false)
		g.line("lo[%d] = 0;", i)
		g.line("hi[%d] = 0;", i)
		if j == 0 {
			g.line("if (%s && !fits%d) {  // more blocks than reads: the term's range", some, slot)
			g.line("  lo[%d] = %s;", i, n.ka)
			g.line("  hi[%d] = %s + 1;", i, n.kb)
			g.line("}")
		}
		g.line("if (%s && fits%d && %s <= %s) {", some, slot, qj, n.qb)
		v := fmt.Sprintf("v%d", i)
		g.line("  const long long a = maskc_py_max(%s, %s * %s), e = maskc_py_min(%s, %s * %s + %s);", n.ka, v, intLit(s.blk), n.kb, v, intLit(s.blk), intLit(s.blk-1))
		g.line("  lo[%d] = a <= e ? a : 0;", i)
		g.line("  hi[%d] = a <= e ? e + 1 : 0;", i)
		g.line("}")
	}
}

// selectionFact is MASKC_KV_SELECTION's definition, printed before
// maskc_kv_intervals where the row walk takes selections (selWalk): the
// backward's tile classes (hipsrc/attn_bwd.h) then also test each tile
// against the q tile's kv intervals (maskc_kv_tile_meets, hipsrc/frame.h),
// so that its column walk skips the q tiles whose selections miss the kv
// tile, as the forward's row walk never visits them. Kernels of other
// masks do not define it and are unchanged.
const selectionFact = "// maskc_kv_intervals reads the kv blocks selected per block of q rows from a buffer:\n" +
	"// the backward classes a tile empty when it meets none of them (maskc_kv_tile_meets).\n" +
	"#define MASKC_KV_SELECTION 1\n"

// selWalk reports whether the row walk takes the plan's selections.
func selWalk(p sparsityPlan) bool {
	_, ok := selIntervals(p)
	return ok
}

// TileList is how a kernel lists the kv tiles a q tile visits: the choice
// among analytic, data-driven and pre-pass tile lists (Kernel.TileList).
type TileList string

// The tile lists.
const (
	// TileListAnalytic: intervals computed from the mask's bounds.
	TileListAnalytic TileList = "analytic"
	// TileListDataDriven: intervals read from a buffer of selected blocks
	// (selection.go), with the analytic ones of the other terms.
	TileListDataDriven TileList = "data-driven"
	// TileListPrepass: a pre-pass flags every tile.
	TileListPrepass TileList = "pre-pass"
	// TileListNone: no mask, every tile.
	TileListNone TileList = "none"
)

// PrepassTileCost is the cost model's price of flagging one tile in the
// pre-pass, in visited tiles (a visited tile loads K and V and runs the
// MMAs; a flag evaluates the mask once per pair and loads nothing). It is
// a model constant, not a measurement.
const PrepassTileCost = 0.125

// TileList returns the kernel's tile list and why it was chosen. The
// choice is by estimated cost in visited tiles (the tile map's counts
// give the estimates for one launch): a data-driven list visits a subset
// of the analytic one's tiles and costs one read per selected block, so
// it is taken wherever a term selects blocks and the intervals fit; the
// pre-pass costs PrepassTileCost per tile plus the tiles holding a kept
// pair, below the analytic list wherever that visits tiles without one —
// a term with no kv bound (unless its only unbounded conditions are
// remainders, which the analytic list's tile filter tests per tile,
// period.go), or a term whose conditions relate q and kv through buffer
// values (`img[q] == img[kv]` over ids not declared segments), whose
// empty tiles only the data shows — and is taken only there.
func (k *Kernel) TileList() (TileList, string) {
	p := k.sparsity
	switch {
	case p.kind == SparsityNone:
		return TileListNone, p.reason
	case p.kind == SparsityPrepass:
		return TileListPrepass, p.reason
	case selWalk(p):
		n, _ := selIntervals(p)
		var sels []string
		for _, d := range p.disjuncts {
			if d.kv.sel != nil {
				sels = append(sels, "`"+d.kv.sel.text+"`")
			}
		}
		return TileListDataDriven, fmt.Sprintf("%d kv intervals, the selected blocks of %s read from the buffer per block of q rows; %s", n, strings.Join(uniq(sels), ", "), p.reason)
	}
	return TileListAnalytic, p.reason
}

// AnalyticAlternative returns k with the analytic tile list in place of a
// data-driven or pre-pass one whose mask has an analysed normal form, for
// the tile map's estimates (tilemap.VisitedTiles of it is that list's
// cost); nil where k's list is analytic already or there is none.
func (k *Kernel) AnalyticAlternative() *Kernel {
	kind, _ := k.TileList()
	switch {
	case kind == TileListDataDriven:
		return k.WithoutSelection()
	case kind == TileListPrepass && k.sparsity.analysed:
		c := *k
		c.Sparsity, c.sparsity.kind = SparsityAnalytic, SparsityAnalytic
		return &c
	}
	return nil
}

// WithoutSelection returns k with its block selections walked as the
// ranges of their terms' other bounds (the analytic tile list), for the
// tile map's estimates; k itself when it takes none.
func (k *Kernel) WithoutSelection() *Kernel {
	if !selWalk(k.sparsity) {
		return k
	}
	c := *k
	c.sparsity.disjuncts = append([]disjunctPlan(nil), k.sparsity.disjuncts...)
	for i := range c.sparsity.disjuncts {
		d := &c.sparsity.disjuncts[i]
		d.kv.sel = nil
		if d.selFull != nil { // its full test was the one with the selection
			d.full, d.selFull = nil, nil
		}
	}
	return &c
}

// selFull prints the statements before term i's full test that decide
// whether the tile's rows [qa, qb] read one selected block v (one D-row
// block of q, or an index free of q) and its keys [ka, kb] lie in [B*v,
// B*v + B), and returns the variable holding it. The read is made with
// no branch around it (see selCode).
//
// With rows (maskc_g_tile_full_rows), the rows' kv intervals iv_lo,
// iv_hi (maskc_kv_intervals, local keys, iv_off the frame's first key)
// give the answer with no read: where the rows lie in one D-row block,
// the term's first interval slot is [B*v, B*v + B) met with the term's kv
// range over the rows, and a tile inside it lies in the block (a tile
// reaching outside that range holds a pair the term's bounds drop, so its
// full test fails either way).
func (g *sparsityWriter) selFull(s *selStep, i, slot int, rows bool) string {
	name := fmt.Sprintf("sel_full%d", i)
	one := "true"
	if s.qDiv != 0 {
		one = fmt.Sprintf("maskc_py_floordiv(qa, %s) == maskc_py_floordiv(qb, %s)", intLit(s.qDiv), intLit(s.qDiv))
	}
	if rows {
		g.line("// %s over the whole tile, from the rows' interval %d", s.text, slot)
		g.line("const bool %s = %s && ka >= iv_lo[%d] + iv_off && kb < iv_hi[%d] + iv_off;", name, one, slot, slot)
		return name
	}
	g.line("// %s over the whole tile", s.text)
	g.selRead(s, "qa", i, true)
	g.line("const bool %s = %s && ka >= v%d * %s && kb <= v%d * %s + %s;", name, one, i, intLit(s.blk), i, intLit(s.blk), intLit(s.blk-1))
	return name
}

// selFull is selFull's test on the host.
func (s *HostSparsity) selFull(sel *selStep, b, h, qa, qb, ka, kb int64) (bool, error) {
	if sel.qDiv != 0 && floorDiv(qa, sel.qDiv) != floorDiv(qb, sel.qDiv) {
		return false, nil
	}
	v, err := s.exprs[sel.val].Int(b, h, qa, 0)
	if err != nil {
		return false, err
	}
	v = min(max(v, -1), s.env.KV/sel.blk+1)
	return ka >= v*sel.blk && kb <= v*sel.blk+sel.blk-1, nil
}

// selRead prints v<i>, the block selValue reads at row q, declared at the
// function's level so that no branch surrounds the read.
func (g *sparsityWriter) selRead(s *selStep, q string, i int, perTile bool) {
	g.line("long long v%d;  // read with no branch around it", i)
	g.line("{")
	g.selValue(s, q, perTile)
	g.line("  v%d = v;", i)
	g.line("}")
}

// selValue prints, inside an open block, the selected block number v that
// the buffer read of s gives for the rows starting at q (the q it reads is
// declared when the index reads q // D). v is clamped first so that B*v
// cannot overflow; a clamped value still selects no kv in [0, KV).
//
// With perTile (the full-tile test, asked once per kv tile), the q it
// reads is pinned on AMD to a vector register by an empty asm statement
// that the compiler cannot move: the read and v are then made again on
// every tile, in vector registers, where clang otherwise hoisted every
// term's v out of the kernels' kv loops into scalar registers held across
// them, and spilled those (CDNA: maskc_attn_fwd 1-43, maskc_attn_decode
// 4-14 SGPR spills for a 4-term block selection, issue 26). NVIDIA's
// source is unchanged.
func (g *sparsityWriter) selValue(s *selStep, q string, perTile bool) {
	g.w.temps = map[string]cExpr{}
	if s.qDiv != 0 && perTile {
		g.w.body.WriteString("#if defined(MASKC_PLATFORM_AMD)\n")
		g.line("  long long q = %s;", q)
		g.line("  __asm__ volatile(\"\" : \"+v\"(q));  // per tile, in a vector register (selValue)")
		g.w.body.WriteString("#else\n")
		g.line("  const long long q = %s;", q)
		g.w.body.WriteString("#endif\n")
	} else if s.qDiv != 0 {
		g.line("  const long long q = %s;", q)
	}
	saved := g.w.indent
	g.w.indent = "    "
	v := conv(g.w.expr(s.val), cInt).code
	g.w.indent = saved
	g.w.temps = map[string]cExpr{}
	g.line("  const long long v = maskc_py_min(maskc_py_max(%s, -1LL), KV / %s + 1);", v, intLit(s.blk))
}

// KVTileMeets returns what maskc_kv_tile_meets (hipsrc/frame.h) returns
// for (b, h): whether the keys [kvLo, kvHi) meet one of KVIntervals of the
// query rows [qLo, qHi) and, where the kernel filters tiles (Filters), the
// term of that interval can keep a pair there (KVTileLive).
func (s *HostSparsity) KVTileMeets(b, h, qLo, qHi, kvLo, kvHi int64) (bool, error) {
	lo, hi, err := s.KVIntervals(b, h, qLo, qHi)
	if err != nil {
		return false, err
	}
	return s.KVTileLive(b, h, qLo, qHi, kvLo, kvHi, lo, hi)
}

// BwdTileClass returns the class maskc_bwd_tile_class (hipsrc/attn_bwd.h)
// gives an analytic kernel's tile of rows [qLo, qHi) and keys [kvLo,
// kvHi): 0 when KVRange misses the keys or, where the row walk takes
// selections (MASKC_KV_SELECTION) or the kernel filters tiles
// (MASKC_KV_TILE_FILTER), when KVTileMeets is false (its intervals lie in
// KVRange, which the kernel then does not compute); else
// 2 when TileFull holds, 1 otherwise. Without a mask every tile is full (2); a
// pre-pass kernel reads the forward's flags instead, which this does not
// model (an error).
func (s *HostSparsity) BwdTileClass(b, h, qLo, qHi, kvLo, kvHi int64) (int, error) {
	switch s.k.sparsity.kind {
	case SparsityNone:
		return 2, nil
	case SparsityPrepass:
		return 0, fmt.Errorf("codegen: the backward's pre-pass classes read the forward's flags; BwdTileClass models the analytic ones")
	}
	if selWalk(s.k.sparsity) || s.Filters() {
		if meets, err := s.KVTileMeets(b, h, qLo, qHi, kvLo, kvHi); err != nil || !meets {
			return 0, err
		}
	} else if lo, hi, err := s.KVRange(b, h, qLo, qHi); err != nil || hi <= lo || hi <= kvLo || lo >= kvHi {
		return 0, err
	}
	full, err := s.TileFull(b, h, qLo, qHi, kvLo, kvHi)
	if err != nil || !full {
		return 1, err
	}
	return 2, nil
}
