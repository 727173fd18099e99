package codegen

import (
	"math"
	"strings"

	"github.com/maskc/maskc/buftype"
	"github.com/maskc/maskc/dsl"
)

// exprText prints e in .flex (Python) syntax, parenthesising every compound
// operand, e.g. `(q - kv) <= 1024`. It needs no source text, so it also
// prints lowered expressions whose nodes were synthesised.
func exprText(e dsl.Expr) string {
	var b strings.Builder
	printFlex(&b, e, true, false)
	return b.String()
}

// printFlex prints e; py selects Python spellings of inf and nan.
func printFlex(b *strings.Builder, e dsl.Expr, top, py bool) {
	open := func() {
		if !top {
			b.WriteByte('(')
		}
	}
	closeP := func() {
		if !top {
			b.WriteByte(')')
		}
	}
	switch x := e.(type) {
	case *dsl.VarRef:
		b.WriteString(x.Var.String())
	case *dsl.Ident:
		b.WriteString(x.Name)
	case *dsl.IntLit:
		b.WriteString(dsl.Int(x.Value).String())
	case *dsl.FloatLit:
		v := dsl.Float(x.Value).String()
		if py && (math.IsInf(x.Value, 0) || math.IsNaN(x.Value)) {
			v = "float('" + v + "')"
		}
		b.WriteString(v)
	case *dsl.BoolLit:
		b.WriteString(dsl.Bool(x.Value).String())
	case *dsl.ParenExpr:
		printFlex(b, x.X, top, py)
	case *dsl.UnaryExpr:
		open()
		b.WriteString(x.Op.String())
		if x.Op == dsl.OpNot {
			b.WriteByte(' ')
		}
		printFlex(b, x.X, false, py)
		closeP()
	case *dsl.BinaryExpr:
		open()
		printFlex(b, x.X, false, py)
		b.WriteString(" " + x.Op.String() + " ")
		printFlex(b, x.Y, false, py)
		closeP()
	case *dsl.CompareExpr:
		open()
		for i, o := range x.Operands {
			if i > 0 {
				b.WriteString(" " + x.Ops[i-1].String() + " ")
			}
			printFlex(b, o, false, py)
		}
		closeP()
	case *dsl.CondExpr:
		open()
		printFlex(b, x.Then, false, py)
		b.WriteString(" if ")
		printFlex(b, x.Cond, false, py)
		b.WriteString(" else ")
		printFlex(b, x.Else, false, py)
		closeP()
	case *dsl.CallExpr:
		printFlex(b, x.Fun, false, py)
		b.WriteByte('(')
		for i, a := range x.Args {
			if i > 0 {
				b.WriteString(", ")
			}
			printFlex(b, a, true, py)
		}
		b.WriteByte(')')
	case *dsl.IndexExpr:
		printFlex(b, x.X, false, py)
		if len(x.Indices) == 0 {
			break // a read of a 0-d buffer is its bare name, as in torch
		}
		b.WriteByte('[')
		for i, a := range x.Indices {
			if i > 0 {
				b.WriteString(", ")
			}
			printFlex(b, a, true, py)
		}
		b.WriteByte(']')
	case *dsl.TupleExpr:
		b.WriteByte('(')
		for i, a := range x.Elems {
			if i > 0 {
				b.WriteString(", ")
			}
			printFlex(b, a, true, py)
		}
		b.WriteByte(')')
	default:
		b.WriteString("?")
	}
}

// TorchExpr prints a lowered mask or score as a PyTorch expression with the
// same meaning, for test harnesses that rebuild the mask with torch: the
// index variables b, h, q, kv (and score) are tensors that broadcast,
// B H HKV Q KV are Python ints and buffers are tensors named as in the
// .flex file. Logical operators become & | ~, floor division
// torch.div(..., rounding_mode='floor'), modulo torch.remainder, and
// conditionals torch.where. Subexpressions over sizes and literals only stay
// plain Python, whose // and % already floor.
//
// Float arithmetic is left to torch (a float64 reference gives float64
// tensors), except where the result is cut to a step: the operand of
// int(), floor() and ceil() and the operands of a comparison of floats are
// computed in float32, as the kernel computes them, so that the reference
// takes the same step where float64 and float32 round to different sides
// of it (T5's log bucket: int(log(d / 8) / log(16) * 8) at d = 16).
func TorchExpr(l *dsl.Lowered) string {
	if l == nil || l.Expr == nil {
		return ""
	}
	p := torchPrinter{l: l, scalars: map[dsl.Expr]bool{}}
	return p.print(l.Expr)
}

// torchPrinter prints TorchExpr. With f32 set, float values are float32
// tensors (float(), score and buffer reads become .float(); Python float
// constants then compute in float32 with them), as in the kernel.
type torchPrinter struct {
	l       *dsl.Lowered
	f32     bool
	scalars map[dsl.Expr]bool // scalar's answers, per node (shared by the printer's copies)
}

// narrowInt reports whether x reads a buffer of an integer type narrower
// than 32 bits.
func (p torchPrinter) narrowInt(x *dsl.IndexExpr) bool {
	id, ok := x.X.(*dsl.Ident)
	if !ok {
		return false
	}
	for _, b := range p.l.Buffers {
		if b.Name.Name == id.Name && b.DType != nil {
			d := buftype.Lookup(b.DType.Name)
			return d != nil && d.Kind == buftype.Int && d.Size < 4
		}
	}
	return false
}

// stepOperand prints e, an operand of a step function (int, floor, ceil, a
// comparison): in float32 when e is a float, else as is.
func (p torchPrinter) stepOperand(e dsl.Expr) string {
	if p.l.TypeOf(e) == dsl.TypeFloat {
		p.f32 = true
	}
	return p.print(e)
}

// scalar reports whether e involves no tensor: only literals and sizes.
func (p torchPrinter) scalar(e dsl.Expr) bool {
	if v, ok := p.scalars[e]; ok {
		return v
	}
	ok := true
	switch v := e.(type) {
	case *dsl.VarRef:
		ok = v.Var.IsSize()
	case *dsl.IndexExpr:
		ok = false
	}
	dsl.Inspect(e, func(x dsl.Expr) bool {
		if x == e {
			return true
		}
		if !p.scalar(x) { // every child is answered and kept
			ok = false
		}
		return false
	})
	p.scalars[e] = ok
	return ok
}

func (p torchPrinter) print(e dsl.Expr) string {
	t := p.l.TypeOf(e)
	if p.scalar(e) {
		if _, isCall := e.(*dsl.CallExpr); !isCall {
			return pyScalar(e)
		}
	}
	switch x := e.(type) {
	case *dsl.VarRef:
		if p.f32 && t == dsl.TypeFloat {
			return x.Var.String() + ".float()"
		}
		return x.Var.String()
	case *dsl.IntLit, *dsl.FloatLit, *dsl.BoolLit:
		return pyScalar(e)
	case *dsl.ParenExpr:
		return p.print(x.X)
	case *dsl.UnaryExpr:
		a := p.print(x.X)
		switch x.Op {
		case dsl.OpNot:
			if p.l.TypeOf(x.X) == dsl.TypeBool {
				return "(~" + a + ")"
			}
			return "(" + a + " == 0)"
		case dsl.OpInvert:
			return "(~" + a + ")"
		case dsl.OpPos:
			return a
		}
		return "(-" + a + ")"
	case *dsl.BinaryExpr:
		a, b := p.print(x.X), p.print(x.Y)
		switch x.Op {
		case dsl.OpAnd, dsl.OpOr:
			if t == dsl.TypeBool && p.l.TypeOf(x.X) == dsl.TypeBool && p.l.TypeOf(x.Y) == dsl.TypeBool {
				op := " & "
				if x.Op == dsl.OpOr {
					op = " | "
				}
				return "(" + a + op + b + ")"
			}
			if x.Op == dsl.OpAnd {
				return "torch.where(" + a + " != 0, " + b + ", " + a + ")"
			}
			return "torch.where(" + a + " != 0, " + a + ", " + b + ")"
		case dsl.OpFloorDiv:
			return "torch.div(" + a + ", " + b + ", rounding_mode='floor')"
		case dsl.OpMod:
			return "torch.remainder(" + a + ", " + b + ")"
		}
		return "(" + a + " " + x.Op.String() + " " + b + ")"
	case *dsl.CompareExpr:
		var s strings.Builder
		s.WriteByte('(')
		for i, o := range x.Operands {
			if i > 0 {
				s.WriteString(" " + x.Ops[i-1].String() + " ")
			}
			s.WriteString(p.stepOperand(o))
		}
		s.WriteByte(')')
		return s.String()
	case *dsl.CondExpr:
		return "torch.where(" + p.print(x.Cond) + ", " + p.print(x.Then) + ", " + p.print(x.Else) + ")"
	case *dsl.IndexExpr:
		if len(x.Indices) == 0 {
			return exprText(x.X) // a 0-d buffer: the tensor itself
		}
		var s strings.Builder
		s.WriteString(exprText(x.X) + "[")
		for i, a := range x.Indices {
			if i > 0 {
				s.WriteString(", ")
			}
			s.WriteString(p.print(a))
		}
		s.WriteString("]")
		if p.f32 && t == dsl.TypeFloat {
			s.WriteString(".float()")
		}
		if t == dsl.TypeInt && p.narrowInt(x) {
			// maskc's ints are 64-bit; torch keeps a u8/i8/i16 tensor's
			// type in arithmetic with a Python scalar (uint8 + 200 wraps).
			s.WriteString(".long()")
		}
		return s.String()
	case *dsl.CallExpr:
		return p.call(x, t)
	}
	return exprText(e)
}

func (p torchPrinter) call(x *dsl.CallExpr, t dsl.Type) string {
	name := ""
	if id, ok := x.Fun.(*dsl.Ident); ok {
		if bi := dsl.LookupBuiltin(id.Name); bi != nil {
			name = bi.Name
		}
	}
	step := name == "int" || name == "floor" || name == "ceil"
	args := make([]string, len(x.Args))
	for i, a := range x.Args {
		if step {
			args[i] = p.stepOperand(a)
		} else {
			args[i] = p.print(a)
		}
		if p.scalar(a) {
			args[i] = "torch.as_tensor(" + args[i] + ")"
		}
	}
	switch name {
	case "min":
		return "torch.minimum(" + args[0] + ", " + args[1] + ")"
	case "max":
		return "torch.maximum(" + args[0] + ", " + args[1] + ")"
	case "clamp":
		// torch.clamp rather than minimum(maximum(...)): the same values,
		// and the gradient convention at the bounds that maskc's own
		// derivative follows (the bounds pass it to x; no tie split).
		return "torch.clamp(" + args[0] + ", " + args[1] + ", " + args[2] + ")"
	case "where": // torch.where takes Python scalars for its values
		return "torch.where(" + p.print(x.Args[0]) + ", " + p.print(x.Args[1]) + ", " + p.print(x.Args[2]) + ")"
	case "floor", "ceil":
		if t == dsl.TypeInt {
			return p.print(x.Args[0])
		}
	case "int": // toward zero, NaN to 0, saturating at the int64 bounds (dsl.TruncInt)
		return "torch.nan_to_num(" + args[0] + ".double(), nan=0.0).clamp(-9223372036854775808.0, 9223372036854774784.0).long()"
	case "float":
		if p.f32 {
			return args[0] + ".float()"
		}
		return args[0] + ".double()"
	}
	if name == "" || dsl.Builtins[name].Torch == "" {
		return exprText(x)
	}
	return dsl.Builtins[name].Torch + "(" + strings.Join(args, ", ") + ")"
}

// pyScalar prints a tensor-free expression in Python syntax.
func pyScalar(e dsl.Expr) string {
	var b strings.Builder
	printFlex(&b, e, false, true)
	return b.String()
}
