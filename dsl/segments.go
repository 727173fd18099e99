package dsl

import (
	"fmt"
	"math"

	"github.com/maskc/maskc/buftype"
)

// BufferElemType is the language type a read of an element of d gives.
func BufferElemType(d *buftype.DType) Type {
	switch d.Kind {
	case buftype.Int:
		return TypeInt
	case buftype.Bool:
		return TypeBool
	}
	return TypeFloat
}

// CheckSegments checks the contents of a buffer declared `segments`
// (document ids, which generated kernels binary-search for document
// boundaries): every id an integer that the dtype holds, and the ids
// non-decreasing. A kernel given ids that break this silently attends
// across documents. The error names the first offending element. Every
// reader of a segments buffer uses this one rule: the reference evaluator
// on every bind, the Go runtime on request (AttentionKernel.CheckSegments).
func CheckSegments[T int32 | int64 | float64](ids []T, dtype string) error {
	lo, hi, ok := buftype.IntRange(dtype)
	if !ok || !buftype.CanSegment(dtype) {
		return fmt.Errorf("segments buffer of dtype %s; document ids need %s", dtype, buftype.SegmentNames())
	}
	var prev int64
	for i, v := range ids {
		var x int64
		switch v := any(v).(type) {
		case float64:
			// 2**63 is the first float64 above the int64 range.
			if v != math.Trunc(v) || v < -(1<<63) || v >= 1<<63 {
				return fmt.Errorf("element %d is %v, not an integer document id", i, v)
			}
			x = int64(v)
		case int32:
			x = int64(v)
		case int64:
			x = v
		}
		if x < lo || x > hi {
			return fmt.Errorf("element %d is %d, outside the range of %s [%d, %d]", i, x, dtype, lo, hi)
		}
		if i > 0 && x < prev {
			return fmt.Errorf("element %d (%d) is smaller than element %d (%d): document ids must not decrease", i, x, i-1, prev)
		}
		prev = x
	}
	return nil
}
