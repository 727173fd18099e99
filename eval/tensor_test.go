package eval

import (
	"strings"
	"testing"
)

// TestTensor checks row-major offsets, At and Set, and Validate.
func TestTensor(t *testing.T) {
	x := NewTensor(2, 3)
	x.Set(7, 1, 2)
	x.Set(5, 0, 1)
	if x.Data[5] != 7 || x.Data[1] != 5 || x.At(1, 2) != 7 {
		t.Errorf("row-major layout broken: %v", x.Data)
	}
	for _, tt := range []struct {
		idx []int
		off int
		ok  bool
	}{
		{[]int{0, 0}, 0, true},
		{[]int{1, 0}, 3, true},
		{[]int{1, 2}, 5, true},
		{[]int{2, 0}, 0, false},
		{[]int{0, -1}, 0, false},
		{[]int{0}, 0, false},
	} {
		if off, ok := x.Offset(tt.idx...); off != tt.off || ok != tt.ok {
			t.Errorf("Offset(%v) = %d, %v; want %d, %v", tt.idx, off, ok, tt.off, tt.ok)
		}
	}
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(r.(string), "out of range") {
				t.Errorf("At out of range: recovered %v", r)
			}
		}()
		x.At(0, 3)
	}()
	if err := (&Tensor{Dims: []int{2, 2}, Data: make([]float64, 3)}).Validate(); err == nil {
		t.Error("Validate accepted 3 elements for [2, 2]")
	}
	if err := FromInts(1, 2, 3).Validate(); err != nil {
		t.Errorf("FromInts: %v", err)
	}
}
