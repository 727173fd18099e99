package eval

import (
	"errors"
	"testing"

	"github.com/maskc/maskc/dsl"
)

// TestCompileExpr evaluates sub-expressions of a mask: int and bool nodes
// with the mod's buffers, and refuses a float node.
func TestCompileExpr(t *testing.T) {
	off := bin(dsl.OpAdd, index("plen", b), bin(dsl.OpFloorDiv, h, ilit(2)))
	isEven := cmp(dsl.OpEQ, bin(dsl.OpMod, h, ilit(2)), ilit(0))
	body := bin(dsl.OpAnd, cmp(dsl.OpLE, kv, bin(dsl.OpAdd, q, off)), isEven)
	l := mask(body, buffer("plen", "i32", ref(dsl.SizeB)))
	env := &Env{B: 2, H: 4, HKV: 4, Q: 8, KV: 8, Buffers: map[string]*Tensor{"plen": FromInts(5, -3)}}
	tests := []struct {
		name    string
		e       dsl.Expr
		b, h    int64
		wantInt int64
	}{
		{"buffer term b=0", off, 0, 3, 6},
		{"buffer term b=1", off, 1, 0, -3},
		{"bool as int true", isEven, 1, 2, 1},
		{"bool as int false", isEven, 0, 3, 0},
	}
	for _, tc := range tests {
		x, err := CompileExpr(l, tc.e)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		be, err := x.Bind(env)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, err := be.Int(tc.b, tc.h, 0, 0)
		if err != nil || got != tc.wantInt {
			t.Errorf("%s: Int = %d, %v; want %d", tc.name, got, err, tc.wantInt)
		}
		truth, err := be.Bool(tc.b, tc.h, 0, 0)
		if err != nil || truth != (tc.wantInt != 0) {
			t.Errorf("%s: Bool = %v, %v", tc.name, truth, err)
		}
	}
	if _, err := CompileExpr(l, flit(1.5)); !errors.Is(err, ErrUnsupported) {
		t.Errorf("a float node compiled: %v", err)
	}
	x, _ := CompileExpr(l, off)
	be, _ := x.Bind(env)
	if _, err := be.Int(2, 0, 0, 0); !errors.Is(err, ErrBadPoint) {
		t.Errorf("b outside B: %v, want ErrBadPoint", err)
	}
	if _, err := x.Bind(&Env{B: 2, H: 1, Q: 1, KV: 1}); !errors.Is(err, ErrBadBuffer) {
		t.Errorf("missing buffer: %v, want ErrBadBuffer", err)
	}
}
