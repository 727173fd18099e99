package runtime

import (
	"fmt"
	"strings"
	"unsafe"

	goruntime "runtime"

	"github.com/maskc/maskc/hipsrc"
)

// The parameter lists of the launches are read from the ABI's entries
// (hipsrc.Entries, hipsrc.BwdEntries: names and C types in order), not
// written out here: a launch's argument block has one pinned field per
// value it can pass, and an entry's parameters are bound to those fields
// by name. A parameter this runtime has no value for, or one whose C type
// differs from the field's, is refused when the kernel is loaded.

// field is one value an argument block A can pass: the C type it is
// declared as (a pointer parameter takes any "...*" type: "ptr") and the
// address of the pinned field holding it.
type field[A any] struct {
	ctype string
	at    func(*A) unsafe.Pointer
}

// binding is an entry's parameter list as fields of A, in order.
type binding[A any] struct {
	entry hipsrc.Entry
	at    []func(*A) unsafe.Pointer
}

// bind looks entry name up in the ABI and binds its parameters to fields.
func bind[A any](name string, fields map[string]field[A]) (binding[A], error) {
	e, ok := hipsrc.EntryNamed(name)
	if !ok {
		return binding[A]{}, fmt.Errorf("entry point %s is not in the kernel ABI", name)
	}
	b := binding[A]{entry: e}
	for _, p := range e.Params {
		f, ok := fields[p.Name]
		if !ok {
			return binding[A]{}, fmt.Errorf("%s: parameter %s (%s): this runtime has no value for it", name, p.Name, p.CType)
		}
		if f.ctype != p.CType && !(f.ctype == "ptr" && strings.HasSuffix(p.CType, "*")) {
			return binding[A]{}, fmt.Errorf("%s: parameter %s is %s; this runtime passes %s", name, p.Name, p.CType, f.ctype)
		}
		b.at = append(b.at, f.at)
	}
	return b, nil
}

// params returns the kernel parameter array of b over the argument block
// a (what a launch takes: the address of each value), pinned by p.
func (b binding[A]) params(a *A, p *goruntime.Pinner) []unsafe.Pointer {
	out := make([]unsafe.Pointer, len(b.at))
	for i, at := range b.at {
		out[i] = at(a)
	}
	if len(out) > 0 {
		p.Pin(&out[0])
	}
	return out
}

// fwdFields are the values of a forward launch (maskc_attn_fwd,
// maskc_tile_flags, maskc_seg_check) in an attnArgs.
var fwdFields = map[string]field[attnArgs]{
	"Q":     {"ptr", func(a *attnArgs) unsafe.Pointer { return unsafe.Pointer(&a.q) }},
	"K":     {"ptr", func(a *attnArgs) unsafe.Pointer { return unsafe.Pointer(&a.k) }},
	"V":     {"ptr", func(a *attnArgs) unsafe.Pointer { return unsafe.Pointer(&a.v) }},
	"O":     {"ptr", func(a *attnArgs) unsafe.Pointer { return unsafe.Pointer(&a.o) }},
	"LSE":   {"ptr", func(a *attnArgs) unsafe.Pointer { return unsafe.Pointer(&a.lse) }},
	"flags": {"ptr", func(a *attnArgs) unsafe.Pointer { return unsafe.Pointer(&a.flags) }},
	"shape": {"MaskcShape", func(a *attnArgs) unsafe.Pointer { return unsafe.Pointer(&a.shape) }},
	"buf":   {"MaskcBuffers", func(a *attnArgs) unsafe.Pointer { return unsafe.Pointer(&a.buf) }},
	"maps":  {"MaskcTensorMaps", func(a *attnArgs) unsafe.Pointer { return unsafe.Pointer(&a.maps) }},
}

// bwdFields are the values of the backward's launches in a bwdArgs; the
// tile-flag pre-pass it reruns takes the forward's shape (bwdFlagsFields).
var bwdFields = map[string]field[bwdArgs]{
	"Q":     {"ptr", func(a *bwdArgs) unsafe.Pointer { return unsafe.Pointer(&a.q) }},
	"K":     {"ptr", func(a *bwdArgs) unsafe.Pointer { return unsafe.Pointer(&a.k) }},
	"V":     {"ptr", func(a *bwdArgs) unsafe.Pointer { return unsafe.Pointer(&a.v) }},
	"O":     {"ptr", func(a *bwdArgs) unsafe.Pointer { return unsafe.Pointer(&a.o) }},
	"dO":    {"ptr", func(a *bwdArgs) unsafe.Pointer { return unsafe.Pointer(&a.do) }},
	"dQ":    {"ptr", func(a *bwdArgs) unsafe.Pointer { return unsafe.Pointer(&a.dQ) }},
	"dK":    {"ptr", func(a *bwdArgs) unsafe.Pointer { return unsafe.Pointer(&a.dK) }},
	"dV":    {"ptr", func(a *bwdArgs) unsafe.Pointer { return unsafe.Pointer(&a.dV) }},
	"acc":   {"ptr", func(a *bwdArgs) unsafe.Pointer { return unsafe.Pointer(&a.acc) }},
	"out":   {"ptr", func(a *bwdArgs) unsafe.Pointer { return unsafe.Pointer(&a.out) }},
	"n":     {"long long", func(a *bwdArgs) unsafe.Pointer { return unsafe.Pointer(&a.n) }},
	"shape": {"MaskcBwdShape", func(a *bwdArgs) unsafe.Pointer { return unsafe.Pointer(&a.sh) }},
	"buf":   {"MaskcBuffers", func(a *bwdArgs) unsafe.Pointer { return unsafe.Pointer(&a.buf) }},
	"maps":  {"MaskcTensorMaps", func(a *bwdArgs) unsafe.Pointer { return unsafe.Pointer(&a.maps) }},
}

// bwdFlagsFields are the values of the forward's entries launched with
// the backward (the segments check, the tile-flag pre-pass) in a bwdArgs.
var bwdFlagsFields = map[string]field[bwdArgs]{
	"shape": {"MaskcShape", func(a *bwdArgs) unsafe.Pointer { return unsafe.Pointer(&a.fsh) }},
	"buf":   {"MaskcBuffers", func(a *bwdArgs) unsafe.Pointer { return unsafe.Pointer(&a.buf) }},
	"flags": {"ptr", func(a *bwdArgs) unsafe.Pointer { return unsafe.Pointer(&a.flagsPtr) }},
}

// gridOf returns entry e's grid (its rule, hipsrc.Entry.Grid) for sizes
// and tile values.
func gridOf(e hipsrc.Entry, sz hipsrc.LaunchSizes, tiles map[string]int) Dim3 {
	g := e.EvalWith(sz, tiles)
	return Dim3{X: uint32(g[0]), Y: uint32(g[1]), Z: uint32(g[2])}
}
