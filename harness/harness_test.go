package harness

import (
	"slices"
	"strings"
	"testing"

	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/runtime/host"
)

func TestSampleRows(t *testing.T) {
	tests := []struct {
		sq, blockM, n int
		want          []int // rows that must be present
		count         int
	}{
		{10, 4, 100, []int{0, 1, 9}, 10},
		{1000, 128, 20, []int{0, 896, 897, 999}, 20},
		{1, 128, 5, []int{0}, 1},
	}
	for _, tt := range tests {
		rows := SampleRows(NewRand(1), tt.sq, tt.blockM, tt.n)
		if len(rows) != tt.count || !slices.IsSorted(rows) {
			t.Errorf("SampleRows(%d, %d, %d) = %v", tt.sq, tt.blockM, tt.n, rows)
		}
		for _, r := range tt.want {
			if !slices.Contains(rows, r) {
				t.Errorf("SampleRows(%d, %d, %d) lacks row %d", tt.sq, tt.blockM, tt.n, r)
			}
		}
	}
}

func TestBuffer(t *testing.T) {
	tests := []struct {
		dtype    string
		segments bool
		how      string
		ok       func(v float64) bool
	}{
		{"i32", true, "random documents", func(v float64) bool { return v >= 0 && v < 6 }},
		{"i64", false, "random in [0, 9]", func(v float64) bool { return v >= 0 && v <= 9 && v == float64(int(v)) }},
		{"bool", false, "random bools", func(v float64) bool { return v == 0 || v == 1 }},
		{"f32", false, "random normal", func(v float64) bool { return v > -10 && v < 10 }},
	}
	for _, tt := range tests {
		vals, how := Buffer(NewRand(2), tt.dtype, tt.segments, []int{3, 8}, 9)
		if how != tt.how || len(vals) != 24 {
			t.Errorf("%s: %d values, %q", tt.dtype, len(vals), how)
		}
		for i, v := range vals {
			if !tt.ok(v) || tt.segments && i%8 != 0 && v < vals[i-1] {
				t.Errorf("%s: value %d is %v in %v", tt.dtype, i, v, vals)
				break
			}
		}
	}
	if d := Describe([]float64{0, 0, 1}, "given", true, []int{3}, 24); d != "given: 0,0,1" {
		t.Errorf("short: %q", d)
	}
	long := make([]float64, 30)
	for i := 20; i < 30; i++ {
		long[i] = 1
	}
	if d := Describe(long, "random documents", true, []int{30}, 24); !strings.HasSuffix(d, "lengths 20+10") {
		t.Errorf("segments: %q", d)
	}
}

// TestTensorLayouts checks that the device copy holds, at each layout's
// offset, the element the bhsd reference copy holds.
func TestTensorLayouts(t *testing.T) {
	const B, H, S, D = 2, 3, 4, 2
	for _, layout := range []hipsrc.Layout{hipsrc.LayoutBSHD, hipsrc.LayoutBHSD} {
		dev, ref := Tensor(NewRand(3), host.BF16, layout, B, H, S, D, true)
		for b := 0; b < B; b++ {
			for h := 0; h < H; h++ {
				for s := 0; s < S; s++ {
					for d := 0; d < D; d++ {
						at := ((b*H+h)*S+s)*D + d
						if layout == hipsrc.LayoutBSHD {
							at = ((b*S+s)*H+h)*D + d
						}
						if got, want := float64(host.BF16.Decode(dev[at])), ref.Data[((b*H+h)*S+s)*D+d]; got != want {
							t.Fatalf("%s (%d,%d,%d,%d): device %v, reference %v", layout, b, h, s, d, got, want)
						}
					}
				}
			}
		}
	}
}
