package dsl

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIntervalAddScaled(t *testing.T) {
	const lo, hi = math.MinInt64, math.MaxInt64
	tests := []struct {
		name string
		r    Interval
		k    int64
		o    Interval
		want Interval
	}{
		{"points", Point(3), 2, Point(5), Point(13)},
		{"k = 0 keeps r", Point(3), 0, Unbounded, Point(3)},
		{"index from 0", Point(-1), 1, AtLeast(0), AtLeast(-1)},
		{"negative k flips the sides", Point(10), -2, Interval{Lo: 1, Hi: 4}, Interval{Lo: 2, Hi: 8}},
		{"negative k of a half line", Point(0), -1, AtLeast(1), AtMost(-1)},
		{"unbounded operand side", Interval{Lo: 0, Hi: 5}, 1, AtMost(2), AtMost(7)},
		{"overflow leaves the side unbounded", Point(hi - 1), 2, Interval{Lo: -3, Hi: 1}, Interval{Lo: hi - 7, Hi: hi}},
		{"MinInt64 times anything", Point(0), lo, Point(1), Unbounded},
		{"a lower side at the sentinel is unbounded", Point(lo + 1), 1, Point(-1), AtMost(lo)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.r.AddScaled(tt.k, tt.o))
		})
	}
}

func TestIntervalLattice(t *testing.T) {
	a, b := Interval{Lo: 0, Hi: 10}, Interval{Lo: 5, Hi: 20}
	assert.Equal(t, Interval{Lo: 5, Hi: 10}, a.Meet(b))
	assert.Equal(t, Interval{Lo: 0, Hi: 20}, a.Hull(b))
	assert.Equal(t, a, a.Meet(Unbounded))
	assert.Equal(t, Unbounded, a.Hull(Unbounded))
	assert.True(t, Interval{Lo: math.MinInt32, Hi: math.MaxInt32}.Fits32())
	assert.False(t, Interval{Lo: 0, Hi: math.MaxInt32 + 1}.Fits32())
	assert.False(t, Unbounded.HasLo() || Unbounded.HasHi())
	assert.True(t, AtLeast(0).HasLo() && !AtLeast(0).HasHi())
}
