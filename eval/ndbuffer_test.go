package eval

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/maskc/maskc/dsl"
)

// TestNDBufferReads reads buffers of rank 3, 4 and 8 at every index tuple
// of a box one past each extent: inside, the element at the row-major
// offset (each element holds its own offset, so a wrong offset shows);
// outside, ErrIndexOutOfRange naming the first dimension whose index is
// outside its extent. The indices come from b, h, q and kv and constants,
// as a mask's reads do.
func TestNDBufferReads(t *testing.T) {
	cases := []struct {
		dims []int
		// idx maps (b, h, q, kv) to the index tuple read
		idx  func(b, h, q, kv int64) []int64
		expr []dsl.Expr
	}{
		{[]int{2, 3, 4}, func(b, h, q, kv int64) []int64 { return []int64{b - 1, h - 1, q - 1} },
			[]dsl.Expr{bin(dsl.OpSub, b, ilit(1)), bin(dsl.OpSub, h, ilit(1)), bin(dsl.OpSub, q, ilit(1))}},
		{[]int{3, 2, 2, 3}, func(b, h, q, kv int64) []int64 { return []int64{q - 1, b - 1, h - 1, kv - 1} },
			[]dsl.Expr{bin(dsl.OpSub, q, ilit(1)), bin(dsl.OpSub, b, ilit(1)), bin(dsl.OpSub, h, ilit(1)), bin(dsl.OpSub, kv, ilit(1))}},
		{[]int{2, 1, 2, 1, 1, 2, 1, 3}, func(b, h, q, kv int64) []int64 { return []int64{b - 1, 0, h - 1, 0, 0, q - 1, 0, kv - 1} },
			[]dsl.Expr{bin(dsl.OpSub, b, ilit(1)), ilit(0), bin(dsl.OpSub, h, ilit(1)), ilit(0), ilit(0), bin(dsl.OpSub, q, ilit(1)), ilit(0), bin(dsl.OpSub, kv, ilit(1))}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.dims), func(t *testing.T) {
			dimExprs := make([]dsl.Expr, len(c.dims))
			for i, d := range c.dims {
				dimExprs[i] = ilit(int64(d))
			}
			tn := NewTensor(c.dims...)
			for i := range tn.Data {
				tn.Data[i] = float64(i)
			}
			l := mask(cmp(dsl.OpGE, index("t", c.expr...), ilit(0)), buffer("t", "i32", dimExprs...))
			sc := score(bin(dsl.OpAdd, scoreVar, index("t", c.expr...)), buffer("t", "i32", dimExprs...))
			// The sizes reach one past every extent the indices range over.
			env := &Env{B: 4, H: 4, HKV: 4, Q: 5, KV: 5, Buffers: map[string]*Tensor{"t": tn}}
			fn, sfn := mustCompile(l), mustCompile(sc)
			seen, outside := map[int64]bool{}, 0
			for bb := int64(0); bb < env.B; bb++ {
				for hh := int64(0); hh < env.H; hh++ {
					for qq := int64(0); qq < env.Q; qq++ {
						for kk := int64(0); kk < env.KV; kk++ {
							ix := c.idx(bb, hh, qq, kk)
							off, bad := int64(0), -1
							for d, i := range ix {
								if bad < 0 && (i < 0 || i >= int64(c.dims[d])) {
									bad = d
								}
								off = off*int64(c.dims[d]) + i
							}
							got, err := sfn.Score(env, 0.5, bb, hh, qq, kk)
							_, merr := fn.Mask(env, bb, hh, qq, kk)
							if bad < 0 {
								seen[off] = true
								if err != nil || merr != nil || got != float64(off)+0.5 {
									t.Fatalf("t%v = %v (%v, %v), want element %d", ix, got, err, merr, off)
								}
								continue
							}
							outside++
							var e *Error
							want := fmt.Sprintf("outside [0, %d) in dimension %d", c.dims[bad], bad)
							for _, err := range []error{err, merr} {
								if !errors.As(err, &e) || !errors.Is(err, ErrIndexOutOfRange) || !strings.Contains(e.Detail, want) {
									t.Fatalf("t%v: %v, want ErrIndexOutOfRange %q", ix, err, want)
								}
							}
						}
					}
				}
			}
			n := 1
			for _, d := range c.dims {
				n *= d
			}
			if len(seen) != n || outside == 0 {
				t.Errorf("%d elements read (want all %d), %d reads outside", len(seen), n, outside)
			}
		})
	}
}
