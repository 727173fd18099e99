package tilemap

import (
	"testing"

	"github.com/maskc/maskc/eval"
	"github.com/maskc/maskc/hipsrc"
)

// TestBoxesAgainstPairs compares LaunchAll and Build (boxes decided whole)
// with the pair-by-pair map on testdata/boxes.flex, whose masks read out of
// a buffer (the error must survive a box decided by another operand),
// evaluate both branches of where, compare floats, and mix a selection, a
// modulo and a conditional.
func TestBoxesAgainstPairs(t *testing.T) {
	sel := make([]float64, 2*64)
	for i := range sel {
		sel[i] = float64((i * 7) % 9)
	}
	w := make([]float64, 700)
	for i := range w {
		w[i] = float64(i%5) / 4
	}
	g := make([]float64, 700)
	for _, i := range []int{0, 5, 200, 333, 650} {
		g[i] = 1
	}
	bufs := map[string]*eval.Tensor{"sel": {Dims: []int{2, 64}, Data: sel}, "w": {Dims: []int{700}, Data: w}, "g": {Dims: []int{700}, Data: g}}
	for _, tc := range []struct {
		attention string
		q         int64
		wantErr   bool
	}{
		{"reads_out", 64, false},
		{"reads_out", 300, true},
		{"where_out", 64, false},
		{"where_out", 128, true},
		{"floats", 300, false},
		{"mixed", 300, false},
		{"globals", 700, false},
		{"mixed", 64 * 64, true}, // sel[h, kv // 64] leaves sel at kv >= 4096
	} {
		k := kernelOf(t, "boxes.flex", tc.attention)
		ev := env(1, 2, tc.q, 700, bufs)
		if tc.attention == "mixed" && tc.q > 300 {
			ev.KV = tc.q + 100
			ev.Buffers = map[string]*eval.Tensor{"sel": bufs["sel"], "w": {Dims: []int{int(ev.KV)}, Data: make([]float64, ev.KV)}, "g": {Dims: []int{int(ev.KV)}, Data: make([]float64, ev.KV)}}
		}
		got, gotErr := LaunchAll(k, ev, hipsrc.Platforms)
		for i, p := range hipsrc.Platforms {
			var want Counts
			var wantErr error
			for h := int64(0); h < ev.H && wantErr == nil; h++ {
				m, err := Build(k, ev, Options{Platform: p, H: h, Exhaustive: true})
				if err != nil {
					wantErr = err
					break
				}
				want.add(m.Counts)
				fast, err := Build(k, ev, Options{Platform: p, H: h})
				if err != nil || fast.Counts != m.Counts {
					t.Errorf("%s Q=%d h=%d on %s: Build %+v, %v; pairs %+v", tc.attention, tc.q, h, p, fast.Counts, err, m.Counts)
				}
			}
			if (wantErr != nil) != tc.wantErr || (gotErr != nil) != tc.wantErr {
				t.Fatalf("%s Q=%d: LaunchAll error %v, pair-by-pair error %v, want an error: %v", tc.attention, tc.q, gotErr, wantErr, tc.wantErr)
			}
			if gotErr != nil {
				continue
			}
			want.finish()
			if got[i] != want {
				t.Errorf("%s Q=%d on %s:\n LaunchAll %+v\n pairs     %+v", tc.attention, tc.q, p, got[i], want)
			}
		}
	}
}
