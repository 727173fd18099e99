package harness

import (
	"encoding/json"
	"math"
	"os"
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

// bufferVectors is testdata/buffers.json: the distribution of Buffer's
// draws, case by case, which the GPU scripts' Python generator
// (gpu/buffers.py random_buffer) mirrors and checks against the same file
// (gpu/tests/test_buffers.py).
type bufferVectors struct {
	Draws int
	Cases []struct {
		DType    string
		Segments bool
		Dims     []int
		KV       int
		How      string
		Docs     []int
		Range    []float64
		Inside   bool
		Normal   bool
	}
}

// TestBufferVectors draws every case of testdata/buffers.json and checks
// the draws against the distribution the file states.
func TestBufferVectors(t *testing.T) {
	data, err := os.ReadFile("testdata/buffers.json")
	if err != nil {
		t.Fatal(err)
	}
	var vec bufferVectors
	if err := json.Unmarshal(data, &vec); err != nil {
		t.Fatal(err)
	}
	if len(vec.Cases) == 0 || vec.Draws == 0 {
		t.Fatal("testdata/buffers.json has no cases")
	}
	rng := NewRand(7)
	for _, c := range vec.Cases {
		n := 1
		for _, d := range c.Dims {
			n *= d
		}
		var all []float64
		docs := map[int]bool{}
		for range vec.Draws {
			vals, how := Buffer(rng, c.DType, c.Segments, c.Dims, c.KV)
			if how != c.How || len(vals) != n {
				t.Fatalf("%+v: %d values, %q", c, len(vals), how)
			}
			all = append(all, vals...)
			if !c.Segments {
				continue
			}
			row := c.Dims[len(c.Dims)-1]
			for start := 0; start < n; start += row {
				for i := start; i < start+row; i++ {
					if step := vals[i] - vals[max(i-1, start)]; i == start && vals[i] != 0 || step != 0 && step != 1 {
						t.Fatalf("%+v: row %v: ids must count up from 0 by 0 or 1", c, vals[start:start+row])
					}
				}
				docs[int(vals[start+row-1])+1] = true
			}
		}
		checkDistribution(t, c.How, all, c.Range, c.Inside, c.Normal)
		for k := range docs {
			if k < c.Docs[0] || k > c.Docs[1] {
				t.Errorf("%+v: a row of %d documents", c, k)
			}
		}
		if c.Segments && len(docs) != c.Docs[1]-c.Docs[0]+1 {
			t.Errorf("%+v: rows of %v documents only", c, docs)
		}
	}
}

// checkDistribution checks values against a range (every value in it; its
// ends reached unless inside; the mean within 5%% of the width of its
// middle) or, for normal, a mean within 0.1 of 0 and a standard deviation
// within 0.1 of 1.
func checkDistribution(t *testing.T, what string, vals []float64, rng []float64, inside, normal bool) {
	t.Helper()
	mean, sq := 0.0, 0.0
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		mean += v
		sq += v * v
		lo, hi = min(lo, v), max(hi, v)
	}
	mean /= float64(len(vals))
	std := math.Sqrt(sq/float64(len(vals)) - mean*mean)
	if normal && (math.Abs(mean) > 0.1 || math.Abs(std-1) > 0.1) {
		t.Errorf("%s: mean %v, standard deviation %v", what, mean, std)
	}
	if rng == nil {
		return
	}
	if lo < rng[0] || hi > rng[1] || !inside && (lo != rng[0] || hi != rng[1]) {
		t.Errorf("%s: values in [%v, %v]", what, lo, hi)
	}
	for _, v := range vals {
		if v != math.Trunc(v) {
			t.Fatalf("%s: %v is not an integer", what, v)
		}
	}
	if mid := (rng[0] + rng[1]) / 2; math.Abs(mean-mid) > 0.05*(rng[1]-rng[0]) {
		t.Errorf("%s: mean %v, want about %v", what, mean, mid)
	}
}
