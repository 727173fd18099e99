package codegen

import (
	"fmt"
	"math"
	"strings"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/hipsrc"
)

// This file turns the reads' bounds (readbounds.go) into what `maskc check`
// and the language server say about them: for a buffer of constant
// extents, the sizes at which a read stays inside (W320, a note; a warning
// when it fits at no size), and for an index computed from buffer values
// that its dtype does not keep inside, a warning that the kernel flags
// such a read instead of refusing the call (W321).

// sizeSyms are the sizes a read limit is stated in, with their largest
// values under the launch preconditions.
var sizeSyms = []struct {
	name string
	max  int64
}{{"B", MaxHeadsOrBatch}, {"H", MaxHeadsOrBatch}, {"HKV", MaxHeadsOrBatch}, {"Q", MaxSeqLen}, {"KV", MaxSeqLen}}

// wholeEnv is the bound environment of a launch that is the whole
// attention at sizes s (by name).
func wholeEnv(s map[string]int64) map[string]int64 {
	return hipsrc.BoundEnv(s["B"], s["H"], s["HKV"], s["Q"], s["KV"], 0, 0, 0, s["Q"], s["KV"], s["H"])
}

// boundSyms adds the size symbols b names (the slice's Sq, Skv, Sh as Q,
// KV, H: a whole attention's).
func boundSyms(b *hipsrc.Bound, into map[string]bool) {
	if b == nil {
		return
	}
	if b.Op == "sym" {
		switch b.Sym {
		case "Sq":
			into["Q"] = true
		case "Skv":
			into["KV"] = true
		case "Sh":
			into["H"] = true
		case "q0", "kv0", "h0":
		default:
			into[b.Sym] = true
		}
	}
	for i := range b.Args {
		boundSyms(&b.Args[i], into)
	}
}

// ReadLimit says at which sizes read r stays inside its buffer's constant
// extents ext (-1: an extent that names a size, not considered), for a launch that is the whole attention: "" and
// always true when at every size, never true when at none (then at is the
// range at B = H = HKV = Q = KV = 1), else a condition such as "Q <= 5" or
// "Q <= 8193 and KV <= 8192" (each limit with the other sizes free within
// their own), or "Q = KV <= N".
func ReadLimit(r hipsrc.ReadBound, ext []int64) (limit string, always, never bool) {
	syms := map[string]bool{}
	for _, ix := range r.Index {
		boundSyms(ix.Lo, syms)
		boundSyms(ix.Hi, syms)
	}
	base := map[string]int64{"B": 1, "H": 1, "HKV": 1, "Q": 1, "KV": 1}
	// An extent that names a size (-1) is not what this states: any index fits it.
	ext = append([]int64(nil), ext...)
	for i, n := range ext {
		if n < 0 {
			ext[i] = math.MaxInt64
		}
	}
	fits := func(s map[string]int64) bool { return hipsrc.CheckRead(r, wholeEnv(s), ext) == nil }
	with := func(vals map[string]int64) map[string]int64 {
		m := map[string]int64{}
		for k, v := range base {
			m[k] = v
		}
		for k, v := range vals {
			m[k] = v
		}
		return m
	}
	if !fits(base) {
		return "", false, true
	}
	// largest v in [1, hi] with ok(v), ok(1) holding and ok monotone
	search := func(hi int64, ok func(int64) bool) int64 {
		lo := int64(1)
		if ok(hi) {
			return hi
		}
		for lo+1 < hi {
			mid := lo + (hi-lo)/2
			if ok(mid) {
				lo = mid
			} else {
				hi = mid
			}
		}
		return lo
	}
	var parts, varying []string
	limits := map[string]int64{}
	top := map[string]int64{}
	for _, s := range sizeSyms {
		if !syms[s.name] {
			continue
		}
		varying = append(varying, s.name)
		top[s.name] = s.max
		m := search(s.max, func(v int64) bool { return fits(with(map[string]int64{s.name: v})) })
		limits[s.name] = m
		if m < s.max {
			parts = append(parts, fmt.Sprintf("%s <= %d", s.name, m))
		}
	}
	if len(parts) == 0 {
		if fits(with(top)) {
			return "", true, false
		}
	} else if fits(with(limits)) {
		return strings.Join(parts, " and "), false, false
	}
	hi := int64(math.MaxInt64)
	for _, s := range varying {
		hi = min(hi, top[s])
	}
	m := search(hi, func(v int64) bool {
		vals := map[string]int64{}
		for _, s := range varying {
			vals[s] = v
		}
		return fits(with(vals))
	})
	return fmt.Sprintf("%s <= %d", strings.Join(varying, " = "), m), false, false
}

// readExtents is "rel[8]": the buffer with its declared extents.
func readExtents(r hipsrc.ReadBound) string { return r.Buffer + "[" + strings.Join(r.Dims, ", ") + "]" }

// wholeBound is b for a launch that is the whole attention (q0 = kv0 =
// h0 = 0, Sq = Q, Skv = KV, Sh = H), folded again.
func wholeBound(b *hipsrc.Bound) *hipsrc.Bound {
	if b == nil {
		return nil
	}
	switch b.Op {
	case "const":
		return b
	case "sym":
		switch b.Sym {
		case "q0", "kv0", "h0":
			return ptr(hipsrc.Const(0))
		case "Sq":
			return ptr(hipsrc.Sym("Q"))
		case "Skv":
			return ptr(hipsrc.Sym("KV"))
		case "Sh":
			return ptr(hipsrc.Sym("H"))
		}
		return b
	}
	args := make([]*hipsrc.Bound, len(b.Args))
	for i := range b.Args {
		args[i] = wholeBound(&b.Args[i])
	}
	r := args[0]
	for _, a := range args[1:] {
		switch b.Op {
		case "add":
			r = bAdd(r, a)
		case "min", "max":
			r = bMinMax(b.Op, r, a)
		case "mul":
			if c, ok := r.IsConst(); ok {
				r = bScale(c, a)
			} else if c, ok := a.IsConst(); ok {
				r = bScale(c, r)
			} else {
				r = &hipsrc.Bound{Op: "mul", Args: []hipsrc.Bound{*r, *a}}
			}
		case "floordiv":
			r = &hipsrc.Bound{Op: "floordiv", Args: []hipsrc.Bound{*r, *a}}
		}
	}
	return r
}

// ReadNote is what the language server shows for read r: its index ranges
// for a launch that is the whole attention and, for constant extents ext
// (nil: not constant), the sizes at which it stays inside.
func ReadNote(r hipsrc.ReadBound, ext []int64) string {
	if len(r.Index) == 0 {
		return "the one element of a 0-d buffer: always inside"
	}
	var b strings.Builder
	for i, ix := range r.Index {
		if i > 0 {
			b.WriteString(", ")
		}
		lo, hi := "-inf", "+inf"
		if l := wholeBound(ix.Lo); l != nil {
			lo = l.String()
		}
		if h := wholeBound(ix.Hi); h != nil {
			hi = h.String()
		}
		if len(r.Index) > 1 {
			fmt.Fprintf(&b, "index %d in %s .. %s", i, lo, hi)
		} else {
			fmt.Fprintf(&b, "index in %s .. %s", lo, hi)
		}
		if ix.ValueDependent {
			fmt.Fprintf(&b, " (from the values of %s: an index outside is not read, the kernel flags it)", strings.Join(ix.Depends, ", "))
		}
	}
	if r.In == "score" {
		b.WriteString(" on the pairs the mask keeps")
	}
	if ext != nil && !valueDependent(r) {
		limit, always, never := ReadLimit(r, ext)
		switch {
		case always:
			fmt.Fprintf(&b, "; stays inside %s at every size", readExtents(r))
		case never:
			fmt.Fprintf(&b, "; falls outside %s at every size", readExtents(r))
		default:
			fmt.Fprintf(&b, "; stays inside %s for %s", readExtents(r), limit)
		}
	}
	return b.String()
}

func valueDependent(r hipsrc.ReadBound) bool {
	for _, ix := range r.Index {
		if ix.ValueDependent {
			return true
		}
	}
	return false
}

// ConstExtents returns the extents of buffer decl in p, -1 for each that
// names a size; nil when none is a constant.
func ConstExtents(p *check.Program, decl *dsl.BufferDecl) []int64 {
	for _, b := range p.Buffers {
		if b.Decl != decl {
			continue
		}
		var out []int64
		some := false
		for _, d := range b.Dims {
			if len(d.Coef) != 0 {
				out = append(out, -1)
				continue
			}
			out = append(out, d.Const)
			some = true
		}
		if !some {
			return nil
		}
		return out
	}
	return nil
}

// readDiagnostics reports W320 and W321 for the reads of a kernel: one
// diagnostic per buffer and finding, at the first read with it, which
// counts the other reads it stands for (a block selection's sixteen reads
// of one table, inside it up to the same size, are one note, not sixteen).
func readDiagnostics(src *dsl.Source, p *check.Program, bufs []BufferABI, reads []hipsrc.ReadBound, spans []dsl.Span, diags *dsl.Diagnostics) {
	// A finding's report: at span, about what (one read's text, or it and
	// the count of the others), s the verb's "s" where what is one read.
	type report func(span dsl.Span, what, s string)
	type finding struct {
		span   dsl.Span
		buffer string
		texts  []string // the reads' texts, the first where the report is
		report report
	}
	var order []*finding
	found := map[string]*finding{}
	add := func(r hipsrc.ReadBound, span dsl.Span, key string, rep report) {
		key = r.Buffer + "\x00" + key
		if f := found[key]; f != nil {
			f.texts = append(f.texts, r.Text)
			return
		}
		f := &finding{span: span, buffer: r.Buffer, texts: []string{r.Text}, report: rep}
		found[key] = f
		order = append(order, f)
	}
	for i, r := range reads {
		ext := ConstExtents(p, bufs[r.Slot].Decl)
		if valueDependent(r) {
			proved := ext != nil
			for d, ix := range r.Index {
				if !proved || ix.Lo == nil || ix.Hi == nil {
					proved = false
					break
				}
				lo, ok1 := ix.Lo.IsConst()
				hi, ok2 := ix.Hi.IsConst()
				proved = ok1 && ok2 && lo >= 0 && ext[d] >= 0 && hi < ext[d]
			}
			if proved {
				continue // e.g. a bool index into two entries: the dtype keeps it inside
			}
			var deps []string
			for _, ix := range r.Index {
				deps = append(deps, ix.Depends...)
			}
			deps = uniq(deps)
			add(r, spans[i], "values\x00"+strings.Join(deps, ","), func(span dsl.Span, what, s string) {
				index := "the index of %s is computed"
				if s == "" {
					index = "the indices of %s are computed"
				}
				diags.Warn(src, span, CodeReadValues, index+" from the values of %s, which no size bounds: a value that makes it fall outside %s is not read; the kernel gives %s instead and sets MASKC_STATUS_READ_OUT_OF_RANGE in its status word",
					what, strings.Join(deps, ", "), readExtents(r), strings.TrimSuffix(elemType(bufs[r.Slot].DType).zero, "f")).
					WithHint("clamp the index into the buffer, or check the status word after the call (Go: AttentionKernel.Status; Python: status())")
			})
			continue
		}
		if ext == nil {
			continue
		}
		limit, always, never := ReadLimit(r, ext)
		switch {
		case always:
		case never:
			add(r, spans[i], "never", func(span dsl.Span, what, s string) {
				diags.Warn(src, span, CodeReadRange, "%s fall%s outside %s at every size: every call is refused before launch", what, s, readExtents(r)).
					WithHint("declare %s with more entries, or shift the index into its extents", r.Buffer)
			})
		default:
			add(r, spans[i], "limit\x00"+limit, func(span dsl.Span, what, s string) {
				d := diags.Warn(src, span, CodeReadRange, "%s stay%s inside %s for %s; a call at larger sizes is refused before launch", what, s, readExtents(r), limit)
				d.Severity = dsl.SeverityNote
				d.WithHint("declare %s larger (or with extents in B, H, Q, KV) to run at larger sizes", r.Buffer)
			})
		}
	}
	for _, f := range order {
		// The distinct texts in order, each with its count where it repeats.
		var texts []string
		count := map[string]int{}
		for _, t := range f.texts {
			if count[t]++; count[t] == 1 {
				texts = append(texts, t)
			}
		}
		for i, t := range texts {
			if count[t] > 1 {
				texts[i] = fmt.Sprintf("%s (%d reads)", t, count[t])
			}
		}
		switch n := len(texts); {
		case n == 1:
			f.report(f.span, texts[0], "s") // "rel[q - kv + 3] stays inside"
		case n <= 3: // "a and b", "a, b and c"
			f.report(f.span, strings.Join(texts[:n-1], ", ")+" and "+texts[n-1], "")
		default:
			f.report(f.span, fmt.Sprintf("%s and %d more reads of %s", f.texts[0], len(f.texts)-1, f.buffer), "")
		}
	}
}
