package tilemap

import (
	"math"
	"strings"
	"testing"
)

// TestCheckSize: the host-evaluation limits, with products that overflow
// int64 refused rather than wrapped (issue 31: B*H*Sq*Skv of
// 65535,65535,2^20,2^20 passed as a negative number).
func TestCheckSize(t *testing.T) {
	tests := []struct {
		b, h, sq, skv int64
		want          string // "" accepted, else a fragment of the error
	}{
		{1, 1, 2048, 2048, ""},
		{1, 1, MaxLength, MaxPairs / MaxLength, ""},
		{1, 1, 1, MaxLength + 1, "at most 16777216 long"},
		{1, 1, 1 << 36, 1, "at most 16777216 long"},
		{65535, 65535, 1 << 20, 1 << 20, "65535*65535*1048576*1048576 is above"},
		{math.MaxInt64, math.MaxInt64, 1, 1, "is above"},
		{2, 1, MaxLength, MaxPairs / MaxLength, "is above"},
		{0, 1, 1, 1, "must be positive"},
		{1, 1, -1, 1, "must be positive"},
	}
	for _, tc := range tests {
		err := CheckSize(tc.b, tc.h, tc.sq, tc.skv)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckSize(%d, %d, %d, %d) = %v, want %q", tc.b, tc.h, tc.sq, tc.skv, err, tc.want)
		}
	}
}
