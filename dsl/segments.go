package dsl

import (
	"fmt"
	"math"
)

// IntDTypeRange is the range of values a buffer of integer dtype holds:
// int32's for "i32", int64's for "i64"; ok is false for other dtypes.
func IntDTypeRange(dtype string) (lo, hi int64, ok bool) {
	switch dtype {
	case "i32":
		return math.MinInt32, math.MaxInt32, true
	case "i64":
		return math.MinInt64, math.MaxInt64, true
	}
	return 0, 0, false
}

// CheckSegments checks the contents of a buffer declared `segments`
// (document ids) against the property's promise: every id an integer that
// the dtype holds (CheckSegmentIDs), and the ids non-decreasing
// (FirstDecrease over the whole buffer). Generated kernels compute the mask
// as written for any ids (maskc_seg_check reports a broken order on the
// device, and the segment searches then narrow nothing); this is the check
// for callers who want the promise kept, e.g. the Go runtime's
// AttentionKernel.CheckSegments. The error names the first offending
// element.
func CheckSegments[T int32 | int64 | float64](ids []T, dtype string) error {
	if err := CheckSegmentIDs(ids, dtype); err != nil {
		return err
	}
	if i := FirstDecrease(ids, 0); i >= 0 {
		return fmt.Errorf("element %d (%v) is smaller than element %d (%v): document ids must not decrease", i, ids[i], i-1, ids[i-1])
	}
	return nil
}

// CheckSegmentIDs checks that every id of a segments buffer is an integer
// its dtype holds: what every reader refuses (the reference evaluator on
// every bind), whatever the order.
func CheckSegmentIDs[T int32 | int64 | float64](ids []T, dtype string) error {
	lo, hi, ok := IntDTypeRange(dtype)
	if !ok {
		return fmt.Errorf("segments buffer of dtype %s; document ids need i32 or i64", dtype)
	}
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
	}
	return nil
}

// FirstDecrease returns the first index i whose id is smaller than id i-1
// of the same row (rows of row elements; row <= 0: one row), or -1 when
// every row is non-decreasing: the order maskc_seg_check checks.
func FirstDecrease[T int32 | int64 | float64](ids []T, row int) int {
	for i := 1; i < len(ids); i++ {
		if (row <= 0 || i%row != 0) && ids[i] < ids[i-1] {
			return i
		}
	}
	return -1
}
