package eval

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/maskc/maskc/dsl"
)

// naive enumerates a mask over the whole grid of env into "1"/"." rows per
// (b, h), for comparing with a mask written out by hand.
func naive(t *testing.T, fn *Func, env *Env, b, h int64) string {
	t.Helper()
	bd, err := fn.Bind(env)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for i := int64(0); i < env.Q; i++ {
		if i > 0 {
			sb.WriteByte('/')
		}
		for j := int64(0); j < env.KV; j++ {
			keep, err := bd.Mask(b, h, i, j)
			if err != nil {
				t.Fatal(err)
			}
			if keep {
				sb.WriteByte('1')
			} else {
				sb.WriteByte('.')
			}
		}
	}
	return sb.String()
}

// TestMasks evaluates the attention-gym masks over a small grid; each want
// is the mask written out row by row (q down, kv across).
func TestMasks(t *testing.T) {
	docBuf := buffer("doc", "i32", ident("KV"))
	prefixBuf := buffer("prefix", "i64", ident("B"))
	env := &Env{B: 2, H: 2, HKV: 1, Q: 4, KV: 4, Buffers: map[string]*Tensor{
		"doc":    FromInts(0, 0, 1, 1),
		"prefix": FromInts(2, 0),
	}}
	tests := []struct {
		name string
		l    *dsl.Lowered
		b, h int64
		want string
	}{
		{"causal", mask(cmp(dsl.OpGE, q, kv)), 0, 0, "1.../11../111./1111"},
		{"sliding window 1", mask(bin(dsl.OpAnd, cmp(dsl.OpGE, q, kv), cmp(dsl.OpLE, bin(dsl.OpSub, q, kv), ilit(1)))), 0, 0,
			"1.../11../.11./..11"},
		{"document causal", mask(bin(dsl.OpAnd, cmp(dsl.OpEQ, index("doc", q), index("doc", kv)), cmp(dsl.OpGE, q, kv)), docBuf), 0, 0,
			"1.../11../..1./..11"},
		{"prefix lm per batch, b=0", mask(bin(dsl.OpOr, cmp(dsl.OpLT, kv, index("prefix", b)), cmp(dsl.OpGE, q, kv)), prefixBuf), 0, 0,
			"11../11../111./1111"},
		{"prefix lm per batch, b=1", mask(bin(dsl.OpOr, cmp(dsl.OpLT, kv, index("prefix", b)), cmp(dsl.OpGE, q, kv)), prefixBuf), 1, 0,
			"1.../11../111./1111"},
		{"dilated: |q-kv| <= 2 and |q-kv| % 2 == 0", mask(bin(dsl.OpAnd,
			cmp(dsl.OpLE, call("abs", bin(dsl.OpSub, q, kv)), ilit(2)),
			cmp(dsl.OpEQ, bin(dsl.OpMod, call("abs", bin(dsl.OpSub, q, kv)), ilit(2)), ilit(0)))), 0, 0,
			"1.1./.1.1/1.1./.1.1"},
		{"floor mod on a negative difference: (q - kv) % 3 == 2", mask(cmp(dsl.OpEQ, bin(dsl.OpMod, bin(dsl.OpSub, q, kv), ilit(3)), ilit(2))), 0, 0,
			".1../..1./1..1/.1.."},
		{"floor division: (q - kv) // 2 == -1", mask(cmp(dsl.OpEQ, bin(dsl.OpFloorDiv, bin(dsl.OpSub, q, kv), ilit(2)), ilit(-1))), 0, 0,
			".11./..11/...1/...."},
		{"head-dependent: h == 1 or q == kv, h=1", mask(bin(dsl.OpOr, cmp(dsl.OpEQ, h, ilit(1)), cmp(dsl.OpEQ, q, kv))), 0, 1,
			"1111/1111/1111/1111"},
		{"~ on a bool and bottom-right: ~(kv > q + KV - Q)", mask(unary(dsl.OpInvert, cmp(dsl.OpGT, kv, bin(dsl.OpAdd, q, bin(dsl.OpSub, ref(dsl.SizeKV), sizeQ))))), 0, 0,
			"1.../11../111./1111"},
		{"conditional: (kv <= q) if q < 2 else True", mask(cond(cmp(dsl.OpLE, kv, q), cmp(dsl.OpLT, q, ilit(2)), blit(true))), 0, 0,
			"1.../11../1111/1111"},
		{"chained comparison 0 <= q - kv <= 1", mask(&dsl.CompareExpr{Ops: []dsl.Op{dsl.OpLE, dsl.OpLE},
			Operands: []dsl.Expr{ilit(0), bin(dsl.OpSub, q, kv), ilit(1)}}), 0, 0,
			"1.../11../.11./..11"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fn := mustCompile(tt.l)
			if got := naive(t, fn, env, tt.b, tt.h); got != tt.want {
				t.Errorf("mask =\n%s\nwant\n%s", strings.ReplaceAll(got, "/", "\n"), strings.ReplaceAll(tt.want, "/", "\n"))
			}
		})
	}
}

// TestScores checks score mods against the formula written in Go.
func TestScores(t *testing.T) {
	env := &Env{B: 1, H: 4, HKV: 4, Q: 4, KV: 4, Buffers: map[string]*Tensor{
		"slopes": {Dims: []int{4}, Data: []float64{0.5, 0.25, 0.125, 0.0625}},
	}}
	slopes := buffer("slopes", "f32", ident("H"))
	tests := []struct {
		name    string
		l       *dsl.Lowered
		formula func(s float64, h, i, j int64) float64
	}{
		{"softcap 30", score(bin(dsl.OpMul, flit(30), call("tanh", bin(dsl.OpDiv, scoreVar, flit(30))))),
			func(s float64, h, i, j int64) float64 { return 30 * math.Tanh(s/30) }},
		{"alibi 2 ** (-8 * (h + 1) / H)", score(bin(dsl.OpAdd, scoreVar, bin(dsl.OpMul, bin(dsl.OpSub, kv, q),
			bin(dsl.OpPow, ilit(2), bin(dsl.OpDiv, bin(dsl.OpMul, ilit(-8), bin(dsl.OpAdd, h, ilit(1))), sizeH))))),
			func(s float64, h, i, j int64) float64 { return s + float64(j-i)*math.Pow(2, -8*float64(h+1)/4) }},
		{"alibi from a buffer", score(bin(dsl.OpAdd, scoreVar, bin(dsl.OpMul, index("slopes", h), bin(dsl.OpSub, kv, q))), slopes),
			func(s float64, h, i, j int64) float64 { return s + []float64{0.5, 0.25, 0.125, 0.0625}[h]*float64(j-i) }},
		{"causal as a score", score(call("where", cmp(dsl.OpGE, q, kv), scoreVar, neg(flit(inf)))),
			func(s float64, h, i, j int64) float64 {
				if i >= j {
					return s
				}
				return math.Inf(-1)
			}},
		{"relative bias score + (q - kv)", score(bin(dsl.OpAdd, scoreVar, bin(dsl.OpSub, q, kv))),
			func(s float64, h, i, j int64) float64 { return s + float64(i-j) }},
		{"int body promoted: q - kv", score(bin(dsl.OpSub, q, kv)),
			func(s float64, h, i, j int64) float64 { return float64(i - j) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fn := mustCompile(tt.l)
			for _, s := range []float64{-50, -1.25, 0, 0.3, 7, 80} {
				for hh := int64(0); hh < env.H; hh++ {
					for i := int64(0); i < env.Q; i++ {
						for j := int64(0); j < env.KV; j++ {
							got, err := fn.Score(env, s, 0, hh, i, j)
							want := tt.formula(s, hh, i, j)
							if err != nil || math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) && !(math.IsInf(want, -1) && math.IsInf(got, -1)) {
								t.Fatalf("score(%v, h=%d, q=%d, kv=%d) = %v, %v; want %v", s, hh, i, j, got, err, want)
							}
						}
					}
				}
			}
		})
	}
}

// TestEvalErrors checks that failures at run time are *Errors with the
// right cause, pointing at the right span, and never panics.
func TestEvalErrors(t *testing.T) {
	idxSpan := dsl.Span{Start: 10, End: 20}
	oob := index("doc", bin(dsl.OpAdd, q, ilit(1)))
	oob.Sp = idxSpan
	negIdx := index("doc", bin(dsl.OpSub, q, ilit(1)))
	negIdx.Sp = idxSpan
	bias2 := index("bias", h, bin(dsl.OpAdd, bin(dsl.OpSub, q, kv), ilit(4)))
	bias2.Sp = idxSpan
	div := bin(dsl.OpFloorDiv, q, bin(dsl.OpSub, kv, ilit(2)))
	div.Sp = dsl.Span{Start: 3, End: 14}
	docBuf := buffer("doc", "i32", ident("Q"))
	biasBuf := buffer("bias", "f32", ident("H"), ilit(7))
	env := &Env{B: 1, H: 2, HKV: 2, Q: 4, KV: 4, Buffers: map[string]*Tensor{
		"doc":  FromInts(0, 0, 1, 1),
		"bias": NewTensor(2, 7),
		"frac": {Dims: []int{4}, Data: []float64{0, 0.5, 1, 1}},
	}}
	tests := []struct {
		name       string
		l          *dsl.Lowered
		pt         [4]int64
		cause      error
		span       dsl.Span
		wantDetail string
	}{
		{"index past the end", mask(cmp(dsl.OpEQ, oob, ilit(0)), docBuf), [4]int64{0, 0, 3, 0},
			ErrIndexOutOfRange, idxSpan, "buffer doc: index 4 outside [0, 4) in dimension 0 at b=0 h=0 q=3 kv=0"},
		{"negative index is not wrapped", mask(cmp(dsl.OpEQ, negIdx, ilit(1)), docBuf), [4]int64{0, 0, 0, 0},
			ErrIndexOutOfRange, idxSpan, "buffer doc: index -1 outside [0, 4)"},
		{"second dimension", score(bin(dsl.OpAdd, scoreVar, bias2), biasBuf), [4]int64{0, 1, 3, 0},
			ErrIndexOutOfRange, idxSpan, "buffer bias: index 7 outside [0, 7) in dimension 1"},
		{"division by zero", mask(cmp(dsl.OpEQ, div, ilit(0))), [4]int64{0, 0, 1, 2},
			dsl.ErrDivisionByZero, dsl.Span{Start: 3, End: 14}, "1 // 0"},
		{"overflow", mask(cmp(dsl.OpGT, bin(dsl.OpMul, bin(dsl.OpAdd, q, ilit(1)), ilit(1<<62)), ilit(0))), [4]int64{0, 0, 1, 0},
			dsl.ErrIntegerOverflow, dsl.NoSpan, "overflows int64"},
		{"power overflow", mask(cmp(dsl.OpGT, bin(dsl.OpPow, bin(dsl.OpAdd, q, ilit(1)), ilit(63)), ilit(0))), [4]int64{0, 0, 1, 0},
			dsl.ErrIntegerOverflow, dsl.NoSpan, "2 ** 63 overflows int64"},
		{"int power with a negative exponent", mask(cmp(dsl.OpGT, bin(dsl.OpPow, ilit(2), bin(dsl.OpSub, q, ilit(3))), ilit(0))), [4]int64{0, 0, 1, 0},
			dsl.ErrOperandType, dsl.NoSpan, "2 ** -2"},
		{"float division by zero", score(bin(dsl.OpDiv, scoreVar, bin(dsl.OpSub, q, kv))), [4]int64{0, 0, 2, 2},
			dsl.ErrDivisionByZero, dsl.NoSpan, "division by zero"},
		{"fraction in an int buffer", mask(cmp(dsl.OpEQ, index("frac", q), ilit(0)), buffer("frac", "i32", ident("Q"))), [4]int64{0, 0, 1, 0},
			ErrBadBuffer, dsl.NoSpan, "buffer frac holds 0.5, not an integer"},
		{"point outside Q", mask(cmp(dsl.OpGE, q, kv)), [4]int64{0, 0, 4, 0},
			ErrBadPoint, dsl.NoSpan, "q=4"},
		{"negative point", mask(cmp(dsl.OpGE, q, kv)), [4]int64{0, -1, 0, 0},
			ErrBadPoint, dsl.NoSpan, "h=-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fn := mustCompile(tt.l)
			var err error
			if tt.l.Kind == dsl.MaskMod {
				_, err = fn.Mask(env, tt.pt[0], tt.pt[1], tt.pt[2], tt.pt[3])
			} else {
				_, err = fn.Score(env, 1, tt.pt[0], tt.pt[1], tt.pt[2], tt.pt[3])
			}
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, tt.cause) {
				t.Fatalf("err = %v, want an *Error wrapping %v", err, tt.cause)
			}
			if e.Span != tt.span {
				t.Errorf("span = %v, want %v", e.Span, tt.span)
			}
			if !strings.Contains(e.Detail, tt.wantDetail) {
				t.Errorf("detail = %q, want it to contain %q", e.Detail, tt.wantDetail)
			}
		})
	}
}

// TestShortCircuit checks that `and`, `or` and `x if c else y` skip the
// operand Python skips (so a guarded read is not an error), while `&` and
// where evaluate both sides as torch does.
func TestShortCircuit(t *testing.T) {
	docBuf := buffer("doc", "i32", ident("Q"))
	env := &Env{B: 1, H: 1, HKV: 1, Q: 4, KV: 4, Buffers: map[string]*Tensor{"doc": FromInts(0, 0, 1, 1)}}
	guard := cmp(dsl.OpLT, bin(dsl.OpAdd, q, ilit(1)), sizeQ) // q + 1 < Q
	read := cmp(dsl.OpEQ, index("doc", bin(dsl.OpAdd, q, ilit(1))), ilit(1))
	tests := []struct {
		name    string
		e       dsl.Expr
		wantErr bool
	}{
		{"and", bin(dsl.OpAnd, guard, read), false},
		{"or", bin(dsl.OpOr, unary(dsl.OpNot, guard), read), false},
		{"conditional", cond(read, guard, blit(false)), false},
		{"&", bin(dsl.OpBitAnd, guard, read), true},
		{"where", call("where", guard, read, blit(false)), true},
	}
	for _, tt := range tests {
		_, err := mustCompile(mask(tt.e, docBuf)).Mask(env, 0, 0, 3, 0)
		if (err != nil) != tt.wantErr {
			t.Errorf("%s: err = %v, want error %v", tt.name, err, tt.wantErr)
		}
	}
}

// TestBindErrors checks the buffer checks made when binding an Env.
func TestBindErrors(t *testing.T) {
	l := mask(cmp(dsl.OpEQ, index("doc", q), index("doc", kv)), buffer("doc", "i32", bin(dsl.OpSub, bin(dsl.OpMul, ilit(2), ident("KV")), ilit(1))))
	fn := mustCompile(l)
	sizes := Env{B: 1, H: 1, HKV: 1, Q: 4, KV: 4}
	tests := []struct {
		name string
		buf  *Tensor
		want string
	}{
		{"missing", nil, "buffer doc is not given"},
		{"wrong rank", NewTensor(7, 1), "declared with 1 dimension(s), the tensor has 2"},
		{"wrong extent", NewTensor(8), "dimension 0 is declared 7 for these sizes, the tensor has 8"},
		{"short data", &Tensor{Dims: []int{7}, Data: make([]float64, 3)}, "need 7 elements, data has 3"},
		{"negative extent", &Tensor{Dims: []int{-1}}, "negative extent"},
	}
	for _, tt := range tests {
		env := sizes
		env.Buffers = map[string]*Tensor{}
		if tt.buf != nil {
			env.Buffers["doc"] = tt.buf
		}
		_, err := fn.Bind(&env)
		if !errors.Is(err, ErrBadBuffer) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
	env := sizes
	env.Buffers = map[string]*Tensor{"doc": NewTensor(7)}
	if _, err := fn.Bind(&env); err != nil {
		t.Errorf("a 2*KV-1 buffer: %v", err)
	}
	if _, err := fn.Bind(nil); !errors.Is(err, ErrBadBuffer) {
		t.Errorf("Bind(nil) of a mod reading a buffer: err = %v, want ErrBadBuffer", err)
	}
	if _, err := mustCompile(score(scoreVar)).Mask(&env, 0, 0, 0, 0); !errors.Is(err, ErrUnsupported) {
		t.Errorf("a score evaluated as a mask: err = %v, want ErrUnsupported", err)
	}
	if _, err := mustCompile(mask(blit(true))).Score(&env, 1, 0, 0, 0, 0); !errors.Is(err, ErrUnsupported) {
		t.Errorf("a mask evaluated as a score: err = %v, want ErrUnsupported", err)
	}
	if _, err := mustCompile(mask(cmp(dsl.OpGE, q, kv))).Mask(nil, 0, 0, 0, 0); !errors.Is(err, ErrBadPoint) {
		t.Errorf("Mask(nil env): err = %v, want ErrBadPoint", err)
	}
	flags := mustCompile(mask(index("ok", q), buffer("ok", "bool", ident("Q"))))
	env.Buffers = map[string]*Tensor{"ok": {Dims: []int{4}, Data: []float64{0, 1, 2, 1}}}
	if _, err := flags.Mask(&env, 0, 0, 2, 0); !errors.Is(err, ErrBadBuffer) || !strings.Contains(err.Error(), "bool buffer ok holds 2, not 0 or 1") {
		t.Errorf("bool buffer holding 2: err = %v", err)
	}
	env.Buffers["ok"].Data[2] = 0
	if got := naive(t, flags, &env, 0, 0); got != "..../1111/..../1111" {
		t.Errorf("bool buffer mask = %q", got)
	}
	env.Buffers = map[string]*Tensor{"doc": {Dims: []int{7}, Data: []float64{0, 1, 2, 1 << 54, 0, 0, 0}}}
	if _, err := fn.Mask(&env, 0, 0, 0, 0); err != nil {
		t.Errorf("reading doc[0] next to a bad element: %v", err)
	}
	if _, err := fn.Mask(&env, 0, 0, 0, 3); !errors.Is(err, ErrBadBuffer) || !strings.Contains(err.Error(), "buffer doc holds 1.8014398509481984e+16, outside the range of i32") {
		t.Errorf("int buffer holding 2**54: err = %v", err)
	}
	i32 := mustCompile(mask(cmp(dsl.OpEQ, index("w", kv), ilit(0)), buffer("w", "i32", ident("KV"))))
	env.Buffers = map[string]*Tensor{"w": {Dims: []int{4}, Data: []float64{0, 1 << 31, 0, 0}}}
	if _, err := i32.Mask(&env, 0, 0, 0, 1); !errors.Is(err, ErrBadBuffer) || !strings.Contains(err.Error(), "buffer w holds 2.147483648e+09, outside the range of i32") {
		t.Errorf("i32 buffer holding 2**31: err = %v", err)
	}
	env.Buffers = map[string]*Tensor{"doc": {Dims: []int{1 << 62, 4}}}
	if err := env.Buffers["doc"].Validate(); err == nil || !strings.Contains(err.Error(), "element count overflows") {
		t.Errorf("dims [2**62, 4]: Validate = %v", err)
	}
}

// TestCompileErrors checks that lowered forms the evaluator cannot run are
// refused with a positioned *Error wrapping ErrUnsupported.
func TestCompileErrors(t *testing.T) {
	at := dsl.Span{Start: 5, End: 9}
	free := ident("W")
	free.Sp = at
	tuple := &dsl.TupleExpr{Elems: []dsl.Expr{ilit(1), ilit(2)}, Sp: at}
	modCall := &dsl.CallExpr{Fun: &dsl.Ident{Name: "causal", Sp: at}, Args: []dsl.Expr{b, h, q, kv}, Sp: at}
	notBuf := &dsl.IndexExpr{X: &dsl.Ident{Name: "nope", Sp: at}, Indices: []dsl.Expr{q}, Sp: at}
	floatIdx := flit(1.5)
	floatIdx.Sp = at
	invFloat := &dsl.UnaryExpr{Op: dsl.OpInvert, X: flit(1), Sp: at}
	andInt := &dsl.BinaryExpr{Op: dsl.OpAnd, X: q, Y: kv, Sp: at}
	bitFloat := &dsl.BinaryExpr{Op: dsl.OpBitOr, X: q, Y: flit(1), Sp: at}
	intBody := &dsl.BinaryExpr{Op: dsl.OpSub, X: q, Y: kv, Sp: at}
	scoreInMask := &dsl.VarRef{Var: dsl.VarScore, Sp: at}
	mistyped := &dsl.BinaryExpr{Op: dsl.OpAdd, X: q, Y: kv, Sp: at}
	whereInt := &dsl.CallExpr{Fun: ident("where"), Args: []dsl.Expr{q, blit(true), blit(false)}, Sp: at}
	whereInt.Args[0] = &dsl.VarRef{Var: dsl.VarQ, Sp: at}
	docBuf := buffer("doc", "i32", ident("Q"))
	tests := []struct {
		name string
		l    *dsl.Lowered
		want string
	}{
		{"free name", mask(cmp(dsl.OpLT, q, free)), "unresolved name W"},
		{"tuple", mask(cmp(dsl.OpEQ, tuple, q)), "cannot appear in a lowered mod"},
		{"mod call", mask(modCall), "causal is not a built-in"},
		{"unknown buffer", mask(cmp(dsl.OpEQ, notBuf, ilit(0))), "nope is not a buffer"},
		{"float index", mask(cmp(dsl.OpEQ, index("doc", floatIdx), ilit(0)), docBuf), "a buffer index must be int, not float"},
		{"wrong index count", mask(&dsl.CompareExpr{Ops: []dsl.Op{dsl.OpEQ}, Operands: []dsl.Expr{&dsl.IndexExpr{X: ident("doc"), Indices: []dsl.Expr{q, kv}, Sp: at}, ilit(0)}}, docBuf),
			"buffer doc has 1 dimension(s), indexed with 2"},
		{"~ on float", mask(cmp(dsl.OpEQ, invFloat, flit(0))), "unary ~ does not take float"},
		{"and on ints", mask(andInt), "and does not take int and int"},
		{"| with a float", mask(cmp(dsl.OpEQ, bitFloat, ilit(0))), "| does not take int and float"},
		{"int mask body", mask(intBody), "a mask must be bool, this body is int"},
		{"score in a mask", mask(cmp(dsl.OpGT, scoreInMask, flit(0))), "a mask mod has no score"},
		{"checker type disagrees", &dsl.Lowered{Kind: dsl.MaskMod, Name: "m", Expr: cmp(dsl.OpGT, mistyped, ilit(0)),
			Types: map[dsl.Expr]dsl.Type{mistyped: dsl.TypeFloat}}, "the checker typed this float, Python's rules make it int"},
		{"where on an int condition", mask(whereInt), "the condition of where must be bool, not int"},
		{"unknown dtype", mask(blit(true), &dsl.BufferDecl{Name: ident("x"), DType: &dsl.Ident{Name: "u16"}, Sp: at}), "unknown element type"},
		{"nil", nil, "no expression"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile(tt.l)
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrUnsupported) {
				t.Fatalf("err = %v, want an *Error wrapping ErrUnsupported", err)
			}
			if !strings.Contains(e.Detail, tt.want) {
				t.Errorf("detail = %q, want %q", e.Detail, tt.want)
			}
			if tt.l != nil && e.Span != at {
				t.Errorf("span = %v, want %v", e.Span, at)
			}
		})
	}
}

// TestErrorLocate checks the positioned one-line form.
func TestErrorLocate(t *testing.T) {
	src := dsl.NewSource("doc.flex", []byte("buffer doc: i32[Q]\nmask m(b, h, q, kv) = doc[q + 1] == 0\n"))
	e := &Error{Mod: "mask m", Span: dsl.Span{Start: 41, End: 51}, Err: ErrIndexOutOfRange, Detail: "buffer doc: index 4 outside [0, 4)"}
	want := "doc.flex:2:23: mask m: buffer doc: index 4 outside [0, 4)"
	if got := e.Locate(src); got != want {
		t.Errorf("Locate = %q, want %q", got, want)
	}
	if got := e.Error(); got != "mask m: buffer doc: index 4 outside [0, 4) (source bytes 41-51)" {
		t.Errorf("Error = %q", got)
	}
}
