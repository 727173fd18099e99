package hipsrc

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// This file is the data a launcher needs to refuse, before any launch, a
// call whose buffer reads would fall outside the buffers' extents (issue
// 33): for every buffer read of a kernel's mask and score, the range of
// each index as an integer expression of the call's sizes (Bound), written
// by the code generator (codegen/readbounds.go) into the manifest's
// "reads" and into runtime.AttentionSpec. MANIFEST.md documents the JSON;
// python/maskc/checks.py evaluates the same data (no eval of strings).

// Bound symbols: the sizes the mask sees and the index ranges of the
// launch. Without a position frame q0 = kv0 = h0 = 0, Sq = Q, Skv = KV and
// Sh = H; with one (context-parallel slices, hipsrc/frame.h) B, H, HKV, Q
// and KV are the global sizes and the launch computes rows q0 .. q0+Sq-1,
// keys kv0 .. kv0+Skv-1 and heads h0 .. h0+Sh-1 of them.
var BoundSymbols = []string{"B", "H", "HKV", "Q", "KV", "q0", "kv0", "h0", "Sq", "Skv", "Sh"}

// Bound is an integer expression over BoundSymbols, as data: exactly one of
// a constant (Op "const", Value), a symbol (Op "sym", Sym), or an operation
// on Args: "add" (sum), "mul" (product), "min", "max" (of two or more), or
// "floordiv" (Args[0] // Args[1], Python's floor division; the generator
// writes it with a positive constant divisor only).
type Bound struct {
	Op    string  `json:"op"`
	Value int64   `json:"value,omitempty"`
	Sym   string  `json:"sym,omitempty"`
	Args  []Bound `json:"args,omitempty"`
}

// Const returns the constant bound v.
func Const(v int64) Bound { return Bound{Op: "const", Value: v} }

// Sym returns the bound that is symbol s.
func Sym(s string) Bound { return Bound{Op: "sym", Sym: s} }

// IsConst reports whether b is a constant, and its value.
func (b Bound) IsConst() (int64, bool) { return b.Value, b.Op == "const" }

// Eval evaluates b with the symbol values env; an error for an unknown
// symbol or operation, a zero divisor, or int64 overflow (the launcher then
// refuses: no range is known).
func (b Bound) Eval(env map[string]int64) (int64, error) {
	switch b.Op {
	case "const":
		return b.Value, nil
	case "sym":
		v, ok := env[b.Sym]
		if !ok {
			return 0, fmt.Errorf("bound names unknown symbol %q", b.Sym)
		}
		return v, nil
	}
	if len(b.Args) == 0 {
		return 0, fmt.Errorf("bound operation %q has no operands", b.Op)
	}
	vs := make([]int64, len(b.Args))
	for i, a := range b.Args {
		v, err := a.Eval(env)
		if err != nil {
			return 0, err
		}
		vs[i] = v
	}
	r := vs[0]
	for _, v := range vs[1:] {
		switch b.Op {
		case "add":
			s := r + v
			if (s > r) != (v > 0) {
				return 0, fmt.Errorf("bound overflows int64")
			}
			r = s
		case "mul":
			hi, lo := bits.Mul64(uint64(absI(r)), uint64(absI(v)))
			if hi != 0 || lo > math.MaxInt64 || r == math.MinInt64 || v == math.MinInt64 {
				return 0, fmt.Errorf("bound overflows int64")
			}
			if (r < 0) != (v < 0) {
				r = -int64(lo)
			} else {
				r = int64(lo)
			}
		case "min":
			r = min(r, v)
		case "max":
			r = max(r, v)
		case "floordiv":
			if v == 0 || len(vs) != 2 {
				return 0, fmt.Errorf("bound divides by zero")
			}
			if v == -1 && r == math.MinInt64 {
				return 0, fmt.Errorf("bound overflows int64")
			}
			d := r / v
			if r%v != 0 && (r < 0) != (v < 0) {
				d--
			}
			r = d
		default:
			return 0, fmt.Errorf("unknown bound operation %q", b.Op)
		}
	}
	return r, nil
}

func absI(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// String writes b as a Python expression over the symbols, for messages.
func (b Bound) String() string {
	var w strings.Builder
	b.write(&w, 0)
	return w.String()
}

// write prints b; prec is the binding strength of the context (0 top, 1
// sum, 2 product).
func (b Bound) write(w *strings.Builder, prec int) {
	switch b.Op {
	case "const":
		if b.Value < 0 && prec > 0 {
			fmt.Fprintf(w, "(%d)", b.Value)
			return
		}
		w.WriteString(strconv.FormatInt(b.Value, 10))
	case "sym":
		w.WriteString(b.Sym)
	case "add":
		if prec > 1 {
			w.WriteByte('(')
		}
		for i, a := range b.Args {
			if c, ok := a.IsConst(); ok && i > 0 && c < 0 {
				fmt.Fprintf(w, " - %d", -c)
				continue
			}
			if i > 0 && a.Op == "mul" && len(a.Args) == 2 {
				if c, ok := a.Args[0].IsConst(); ok && c < 0 {
					w.WriteString(" - ")
					if c != -1 {
						fmt.Fprintf(w, "%d * ", -c)
					}
					a.Args[1].write(w, 2)
					continue
				}
			}
			if i > 0 {
				w.WriteString(" + ")
			}
			a.write(w, 1)
		}
		if prec > 1 {
			w.WriteByte(')')
		}
	case "mul":
		if len(b.Args) == 2 {
			if c, ok := b.Args[0].IsConst(); ok && c == -1 {
				w.WriteString("-")
				b.Args[1].write(w, 3)
				return
			}
		}
		for i, a := range b.Args {
			if i > 0 {
				w.WriteString(" * ")
			}
			a.write(w, 2)
		}
	case "floordiv":
		b.Args[0].write(w, 2)
		w.WriteString(" // ")
		b.Args[1].write(w, 3)
	default:
		w.WriteString(b.Op + "(")
		for i, a := range b.Args {
			if i > 0 {
				w.WriteString(", ")
			}
			a.write(w, 0)
		}
		w.WriteString(")")
	}
}

// ReadIndex is the range of one index of a buffer read.
type ReadIndex struct {
	// Lo and Hi bound the index over the pairs where the read's value can
	// change the result (Lo > Hi: there are none at these sizes); nil: no
	// bound from the sizes alone.
	Lo *Bound `json:"lo"`
	Hi *Bound `json:"hi"`
	// ValueDependent says that the index is computed from buffer values:
	// Lo and Hi then bound it over every value the buffers' dtypes hold,
	// and a launcher that cannot prove the read in range from them lets it
	// run: the kernel flags it (MASKC_STATUS_READ_OUT_OF_RANGE) instead.
	ValueDependent bool `json:"value_dependent"`
	// Depends names the buffers whose values the index is computed from.
	Depends []string `json:"depends,omitempty"`
}

// ReadBound is one buffer read of a kernel's mask or score.
type ReadBound struct {
	// Buffer is the buffer's name, Slot its MaskcBuffers slot.
	Buffer string `json:"buffer"`
	Slot   int    `json:"slot"`
	// At is the read's position in the .flex file, "FILE:LINE:COL".
	At string `json:"at"`
	// Text is the read as written, e.g. "rel[q - kv + 3]".
	Text string `json:"text"`
	// In is "mask" or "score": a score read counts only on the pairs the
	// mask keeps (on the others the score is discarded), a mask read on
	// every pair of the launch.
	In string `json:"in"`
	// Dims are the declared extents (as in BufferSlot.Dims), Index the
	// range of each index.
	Dims  []string    `json:"dims"`
	Index []ReadIndex `json:"index"`
}

// BoundEnv returns the symbol values of a launch: the sizes the mask sees
// (B, H, HKV, Q, KV) and the launch's slice of them (offsets q0, kv0, h0
// and counts Sq, Skv, Sh; a launch that is the whole attention has zero
// offsets and Sq = Q, Skv = KV, Sh = H).
func BoundEnv(b, h, hkv, q, kv, q0, kv0, h0, sq, skv, sh int64) map[string]int64 {
	return map[string]int64{"B": b, "H": h, "HKV": hkv, "Q": q, "KV": kv, "q0": q0, "kv0": kv0, "h0": h0, "Sq": sq, "Skv": skv, "Sh": sh}
}

// ReadError is a read that would fall outside its buffer at a call's sizes.
type ReadError struct {
	Read ReadBound
	// Dim is the index that falls outside; Lo and Hi its range at the
	// call's sizes (Unbounded: none is known); Extent the declared extent.
	Dim       int
	Lo, Hi    int64
	Unbounded bool
	Extent    int64
	Sizes     string
}

func (e *ReadError) Error() string {
	r := e.Read
	dim := ""
	if len(r.Dims) > 1 {
		dim = fmt.Sprintf(" in dimension %d", e.Dim)
	}
	ext := strings.Join(r.Dims, ", ")
	if e.Unbounded {
		return fmt.Sprintf("%s: %s reads %s outside its extents: its index%s has no bound at %s; %s is declared [%s] = %d",
			r.At, r.Text, r.Buffer, dim, e.Sizes, r.Buffer, ext, e.Extent)
	}
	return fmt.Sprintf("%s: %s reads %s outside its extents: index%s %d..%d at %s, but %s is declared [%s] = %d there (valid 0..%d)",
		r.At, r.Text, r.Buffer, dim, e.Lo, e.Hi, e.Sizes, r.Buffer, ext, e.Extent, e.Extent-1)
}

// CheckRead checks read r at the symbol values env against the buffer's
// evaluated extents: nil when every index stays inside (or the read cannot
// change the result at these sizes, or its index depends on buffer values
// and is left to the kernel's flag), else a *ReadError.
func CheckRead(r ReadBound, env map[string]int64, extents []int64) error {
	type rng struct {
		lo, hi int64
		ok     bool
	}
	rs := make([]rng, len(r.Index))
	for i, ix := range r.Index {
		if ix.Lo == nil || ix.Hi == nil {
			continue
		}
		lo, err1 := ix.Lo.Eval(env)
		hi, err2 := ix.Hi.Eval(env)
		if err1 == nil && err2 == nil {
			rs[i] = rng{lo, hi, true}
			if lo > hi {
				return nil // no pair at these sizes reads it
			}
		}
	}
	for i, ix := range r.Index {
		if i >= len(extents) {
			break
		}
		n := extents[i]
		if rs[i].ok && rs[i].lo >= 0 && rs[i].hi < n {
			continue
		}
		if ix.ValueDependent {
			continue // the kernel flags it (MASKC_STATUS_READ_OUT_OF_RANGE)
		}
		return &ReadError{Read: r, Dim: i, Lo: rs[i].lo, Hi: rs[i].hi, Unbounded: !rs[i].ok, Extent: n, Sizes: sizesText(env)}
	}
	return nil
}

// sizesText writes the call's sizes for messages: B, H, HKV, Q, KV, and
// the slice when it is not the whole attention.
func sizesText(env map[string]int64) string {
	s := fmt.Sprintf("B=%d H=%d HKV=%d Q=%d KV=%d", env["B"], env["H"], env["HKV"], env["Q"], env["KV"])
	if env["q0"] != 0 || env["kv0"] != 0 || env["h0"] != 0 || env["Sq"] != env["Q"] || env["Skv"] != env["KV"] || env["Sh"] != env["H"] {
		s += fmt.Sprintf(" (rows %d..%d, keys %d..%d, heads %d..%d)", env["q0"], env["q0"]+env["Sq"]-1,
			env["kv0"], env["kv0"]+env["Skv"]-1, env["h0"], env["h0"]+env["Sh"]-1)
	}
	return s
}
