package dsl

import (
	"math"
	"strings"
	"testing"
)

func TestCheckSegments(t *testing.T) {
	tests := []struct {
		name  string
		check func() error
		want  string // "" for valid
	}{
		{"sorted i32", func() error { return CheckSegments([]int32{0, 0, 1, 1, 5}, "i32") }, ""},
		{"empty", func() error { return CheckSegments([]float64{}, "i32") }, ""},
		{"sorted floats", func() error { return CheckSegments([]float64{-3, 0, 0, 2}, "i32") }, ""},
		{"unsorted", func() error { return CheckSegments([]float64{0, 1, 0}, "i32") }, "element 2 (0) is smaller than element 1 (1)"},
		{"unsorted int64", func() error { return CheckSegments([]int64{4, 3}, "i64") }, "element 1 (3) is smaller"},
		{"above int32", func() error { return CheckSegments([]float64{0, 1 << 31}, "i32") }, "element 1 is 2147483648, outside the range of i32"},
		{"below int32", func() error { return CheckSegments([]int64{math.MinInt32 - 1}, "i32") }, "outside the range of i32"},
		{"i64 holds 2**31", func() error { return CheckSegments([]float64{0, 1 << 31}, "i64") }, ""},
		{"fraction", func() error { return CheckSegments([]float64{0, 0.5}, "i32") }, "element 1 is 0.5, not an integer"},
		{"NaN", func() error { return CheckSegments([]float64{math.NaN()}, "i64") }, "not an integer"},
		{"beyond int64", func() error { return CheckSegments([]float64{1e19}, "i64") }, "not an integer"},
		{"float dtype", func() error { return CheckSegments([]float64{0}, "f32") }, "need i32 or i64"},
	}
	for _, tc := range tests {
		err := tc.check()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want valid", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestSegmentOrderIsSeparate: CheckSegmentIDs accepts ids in any order (the
// evaluator and kernels compute them as written) and refuses what the dtype
// cannot hold; FirstDecrease finds the first decrease within a row, not
// across a row boundary (ids restarting per row of a [B, KV] buffer).
func TestSegmentOrderIsSeparate(t *testing.T) {
	if err := CheckSegmentIDs([]float64{3, -1, 0, -1}, "i32"); err != nil {
		t.Errorf("unsorted ids: %v", err)
	}
	if err := CheckSegmentIDs([]float64{0, 1 << 31}, "i32"); err == nil {
		t.Error("an id beyond i32 passed")
	}
	tests := []struct {
		ids  []int32
		row  int
		want int
	}{
		{[]int32{0, 0, 1, 2}, 0, -1},
		{[]int32{0, 1, 0, 1}, 0, 2},
		{[]int32{0, 1, 0, 1}, 2, -1}, // two rows, each sorted
		{[]int32{0, 1, 1, 0}, 2, 3},
		{[]int32{5, -1, 6, -1}, 0, 1}, // -1 padding
		{nil, 0, -1},
	}
	for _, tc := range tests {
		if got := FirstDecrease(tc.ids, tc.row); got != tc.want {
			t.Errorf("FirstDecrease(%v, %d) = %d, want %d", tc.ids, tc.row, got, tc.want)
		}
	}
}
