package check

import (
	"sort"
	"strings"

	"github.com/maskc/maskc/buftype"
	"github.com/maskc/maskc/dsl"
)

// This file lowers what a mod asks of a captured tensor's shape, as
// FlexAttention code writes it: buf.shape[i], buf.size(i), buf.size()[i],
// buf.ndim, buf.dim(), buf.numel(). A buffer's extents are declared (each a
// constant or a linear expression of B, H, HKV, Q, KV) and a call passes a
// tensor of exactly those extents (the runtime checks it), so each of these
// is the declared value: a compile-time constant or an int expression of the
// sizes.

// bufferAttrs are the attributes of a buffer read without a call, with
// what each gives, for hints.
var bufferAttrs = map[string]string{"shape": "the extents, a tuple", "ndim": "the number of dimensions"}

// bufferCasts are the whole-buffer dtype casts and copies a buffer takes
// where they keep its values (sameValues), with what each gives.
var bufferCasts = map[string]string{
	"long":  "the buffer itself, for an int buffer (every int is read in 64 bits)",
	"int":   "the buffer itself, for an int buffer of at most 32 bits",
	"float": "the buffer itself, for a float buffer of at most 32 bits",
	"bool":  "the buffer itself, for a bool buffer",
	// Copies and views that keep every value (transformers' document_ids =
	// attention_mask_2d.clone()).
	"clone":      "the buffer itself: a copy of the same values",
	"contiguous": "the buffer itself: the same values",
	"detach":     "the buffer itself: the same values",
}

// bufferMethods are the tensor methods of a buffer itself (not of an
// element), with what each gives: its shape's, and bufferCasts.
var bufferMethods = func() map[string]string {
	m := map[string]string{
		"size":  "size(): the extents, a tuple; size(i): extent i",
		"dim":   "the number of dimensions",
		"numel": "the product of the extents",
		"item":  "the value of a 0-d buffer (a captured scalar tensor)",
	}
	for name, doc := range bufferCasts {
		m[name] = doc
	}
	return m
}()

// sameValues reports whether buf.name() (a dtype cast of the whole tensor,
// Transfusion's modalities.long()) leaves every element's value as maskc
// reads it: a widening, or no change.
func sameValues(buf *Buffer, name string) bool {
	d := buftype.Lookup(buf.DType)
	if d == nil {
		return false
	}
	switch name {
	case "long":
		return d.Kind == buftype.Int
	case "int":
		return d.Kind == buftype.Int && d.Size <= 4 && (d.Signed || d.Size < 4)
	case "float":
		return d.Kind == buftype.Float && d.Size <= 4
	case "bool":
		return d.Kind == buftype.Bool
	case "clone", "contiguous", "detach":
		return true
	}
	return false
}

// bufferAttr lowers buf.NAME (x, not called).
func (l *lowering) bufferAttr(f *frame, x *dsl.SelectorExpr, buf *Buffer) result {
	switch x.Sel.Name {
	case "shape":
		return l.bufferShape(f, buf, x.Sp)
	case "ndim":
		return l.constant(f, dsl.Int(int64(len(buf.Dims))), x.Sp)
	}
	if _, ok := bufferMethods[x.Sel.Name]; ok {
		l.errorf(f, x.Sp, CodeMethod, "method .%s is used without calling it", x.Sel.Name).
			WithHint("call it: %s()", sourceText(f, x))
		return result{}
	}
	l.errorf(f, x.Sel.Sp, CodeMethod, "buffer %s has no attribute .%s", buf.Name, x.Sel.Name).
		WithHint("a buffer gives %s; read an element with %s[%s]", bufferUses(), buf.Name,
			strings.Join(indexNames(len(buf.Dims)), ", "))
	return result{}
}

// bufferMethod lowers buf.NAME(args) (x).
func (l *lowering) bufferMethod(f *frame, x *dsl.CallExpr, sel *dsl.SelectorExpr, buf *Buffer) result {
	name := sel.Sel.Name
	if name == "item" && len(x.Args) == 0 {
		if len(buf.Dims) != 0 {
			l.errorf(f, sel.Sel.Sp, CodeMethod, "%s.item() reads a 0-d buffer; %s has %d %s %s", buf.Name, buf.Name, len(buf.Dims),
				plural(len(buf.Dims), "dimension", "dimensions"), buf.dimsText()).
				WithHint("read an element: %s[%s]", buf.Name, strings.Join(indexNames(len(buf.Dims)), ", "))
			return result{}
		}
		return l.valueOf(f, x, result{typ: dsl.TypeBuffer, buf: buf})
	}
	if _, ok := bufferMethods[name]; !ok {
		d := l.errorf(f, sel.Sel.Sp, CodeMethod, "buffer %s has no method .%s", buf.Name, name)
		if _, attr := bufferAttrs[name]; attr {
			d.WithHint(".%s is an attribute: write %s.%s", name, buf.Name, name)
		} else {
			d.WithHint("a buffer gives %s; to call a tensor method on an element, read it first: %s[%s].%s()",
				bufferUses(), buf.Name, strings.Join(indexNames(len(buf.Dims)), ", "), name)
		}
		return result{}
	}
	for _, e := range x.Args {
		if k, ok := e.(*dsl.KeywordArg); ok {
			l.errorf(f, k.Name.Sp, CodeKeywordArg, "%s.%s takes no keyword argument %s=", buf.Name, name, k.Name.Name).
				WithHint("pass the dimension by position: %s.size(0)", buf.Name)
			return result{}
		}
	}
	maxArgs := 0
	if name == "size" {
		maxArgs = 1
	}
	if _, cast := bufferCasts[name]; cast {
		if len(x.Args) > 0 || !sameValues(buf, name) {
			l.errorf(f, sel.Sel.Sp, CodeConversion, "%s.%s() changes the values of buffer %s (%s)", buf.Name, name, buf.Name, buf.shape()).
				WithHint("declare %s with the element type the mod reads, or convert an element: %s[...].%s()", buf.Name, buf.Name, name)
			return result{}
		}
		return result{typ: dsl.TypeBuffer, buf: buf}
	}
	if len(x.Args) > maxArgs {
		l.errorf(f, x.Sp, CodeArgCount, "%s.%s takes %s, got %d", buf.Name, name,
			map[int]string{0: "no arguments", 1: "at most one argument"}[maxArgs], len(x.Args)).
			WithHint("%s", bufferMethods[name])
		return result{}
	}
	switch name {
	case "dim":
		return l.constant(f, dsl.Int(int64(len(buf.Dims))), x.Sp)
	case "numel":
		if len(buf.Dims) == 0 {
			return l.constant(f, dsl.Int(1), x.Sp)
		}
		n := l.bufferExtent(f, buf, 0, x.Sp)
		for i := 1; i < len(buf.Dims) && n.ok(); i++ {
			n = l.binaryOf(f, &dsl.BinaryExpr{Sp: x.Sp, Op: dsl.OpMul, OpSp: x.Sp, X: x, Y: x}, n, l.bufferExtent(f, buf, i, x.Sp))
		}
		return n
	}
	shape := l.bufferShape(f, buf, x.Sp)
	if len(x.Args) == 0 || !shape.ok() {
		return shape
	}
	return l.tupleIndex(f, &dsl.IndexExpr{Sp: x.Sp, X: x, Indices: x.Args}, shape)
}

// bufferShape is buf's extents as a tuple, each a constant or an int
// expression of the sizes.
func (l *lowering) bufferShape(f *frame, buf *Buffer, sp dsl.Span) result {
	t := result{typ: dsl.TypeTuple}
	for i := range buf.Dims {
		r := l.bufferExtent(f, buf, i, sp)
		if !r.ok() {
			return result{}
		}
		t.elems = append(t.elems, r)
	}
	return t
}

// bufferExtent is buf's extent i: Const + the sum of Coef[v] * v, its
// terms in the order of the size symbols, floor-divided by Div if it has one.
func (l *lowering) bufferExtent(f *frame, buf *Buffer, i int, sp dsl.Span) result {
	d := buf.Dims[i]
	vars := make([]dsl.Var, 0, len(d.Coef))
	for v, c := range d.Coef {
		if c != 0 {
			vars = append(vars, v)
		}
	}
	sort.Slice(vars, func(a, b int) bool { return vars[a] < vars[b] })
	var acc result
	for _, v := range vars {
		term := l.varRef(f, v, dsl.TypeInt, sp)
		if c := d.Coef[v]; c != 1 {
			term = l.binaryOf(f, &dsl.BinaryExpr{Sp: sp, Op: dsl.OpMul, OpSp: sp, X: d.Expr, Y: d.Expr}, l.constant(f, dsl.Int(c), sp), term)
		}
		if acc.typ == dsl.TypeInvalid {
			acc = term
		} else {
			acc = l.binaryOf(f, &dsl.BinaryExpr{Sp: sp, Op: dsl.OpAdd, OpSp: sp, X: d.Expr, Y: d.Expr}, acc, term)
		}
		if !acc.ok() {
			return result{}
		}
	}
	switch {
	case acc.typ == dsl.TypeInvalid:
		return l.constant(f, dsl.Int(d.Const), sp)
	case d.Const != 0:
		acc = l.binaryOf(f, &dsl.BinaryExpr{Sp: sp, Op: dsl.OpAdd, OpSp: sp, X: d.Expr, Y: d.Expr}, acc, l.constant(f, dsl.Int(d.Const), sp))
	}
	if d.Div > 1 && acc.ok() {
		acc = l.binaryOf(f, &dsl.BinaryExpr{Sp: sp, Op: dsl.OpFloorDiv, OpSp: sp, X: d.Expr, Y: d.Expr}, acc, l.constant(f, dsl.Int(d.Div), sp))
	}
	return acc
}

// bufferUses lists what a buffer gives besides its elements, for hints.
func bufferUses() string {
	return ".shape, .ndim, .size(), .size(i), .dim() and .numel()"
}
