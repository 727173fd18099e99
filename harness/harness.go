// Package harness draws the inputs of a kernel run that is checked against
// the float64 reference (eval.Attention): Q, K and V rounded to the kernel's
// element type, in its layout and as the reference's bhsd tensors; default
// contents for captured buffers; the query rows a sampled check compares.
// `maskc run` uses it; it is deterministic for a given *rand.Rand.
package harness

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/maskc/maskc/buftype"
	"github.com/maskc/maskc/eval"
	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/runtime/host"
)

// NewRand returns the generator a run with this seed draws from.
func NewRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

// Tensor draws a [B, heads, n, D] tensor of standard normal values rounded
// to half: the device copy in layout, and, when withRef, the float64 bhsd
// copy of the values the kernel sees, for the reference.
func Tensor(rng *rand.Rand, half host.Half, layout hipsrc.Layout, B, heads, n, D int, withRef bool) ([]uint16, *eval.Tensor) {
	dev := make([]uint16, B*heads*n*D)
	var ref *eval.Tensor
	if withRef {
		ref = eval.NewTensor(B, heads, n, D)
	}
	bshd := layout == hipsrc.LayoutBSHD
	i := 0
	for b := 0; b < B; b++ {
		for h := 0; h < heads; h++ {
			for s := 0; s < n; s++ {
				at := ((b*heads+h)*n + s) * D
				if bshd {
					at = ((b*n+s)*heads + h) * D
				}
				for d := 0; d < D; d++ {
					v := half.Encode(rng.NormFloat64())
					dev[at+d] = v
					if ref != nil {
						ref.Data[i] = float64(half.Decode(v))
					}
					i++
				}
			}
		}
	}
	return dev, ref
}

// Buffer draws default contents for a captured buffer of element type
// dtype and extents dims, and says how: segments get random non-decreasing
// document ids per row, other ints uniform values in [0, kv] (lengths and
// positions; [0, max] for a type whose max is below kv), bools fair coins and floats standard normals.
// The GPU scripts draw from the same distribution (gpu/buffers.py
// random_buffer, with torch's generator); testdata/buffers.json states it
// case by case, and both tests check their draws against it.
func Buffer(rng *rand.Rand, dtype string, segments bool, dims []int, kv int) ([]float64, string) {
	n := 1
	for _, d := range dims {
		n *= d
	}
	vals := make([]float64, n)
	switch {
	case segments:
		row := dims[len(dims)-1]
		for start := 0; start < n; start += row {
			docs := 1 + rng.IntN(min(row, 6))
			cuts := rng.Perm(row - 1)[:docs-1] // document starts in 1..row-1
			id := 0.0
			starts := map[int]bool{}
			for _, c := range cuts {
				starts[c+1] = true
			}
			for i := 0; i < row; i++ {
				if starts[i] {
					id++
				}
				vals[start+i] = id
			}
		}
		return vals, "random documents"
	case host.IsInt(dtype):
		_, hi, _ := buftype.IntRange(dtype)
		top := int(min(int64(kv), hi)) // an i8 holds at most 127
		for i := range vals {
			vals[i] = float64(rng.IntN(top + 1))
		}
		return vals, fmt.Sprintf("random in [0, %d]", top)
	case dtype == "bool":
		for i := range vals {
			vals[i] = float64(rng.IntN(2))
		}
		return vals, "random bools"
	}
	for i := range vals {
		vals[i] = rng.NormFloat64()
	}
	return vals, "random normal"
}

// Describe prints a buffer so that a run can be reproduced: up to
// maxShown values in full (as `maskc run --buffer` takes them), segments as
// document lengths, longer ones summarised (the seed reproduces them).
func Describe(vals []float64, how string, segments bool, dims []int, maxShown int) string {
	if len(vals) <= maxShown {
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = strconv.FormatFloat(v, 'g', -1, 64)
		}
		return how + ": " + strings.Join(parts, ",")
	}
	if segments {
		row := dims[len(dims)-1]
		var rows []string
		for start := 0; start < len(vals); start += row {
			var lens []string
			run := 0
			for i := start; i < start+row; i++ {
				run++
				if i == start+row-1 || vals[i+1] != vals[i] {
					lens = append(lens, strconv.Itoa(run))
					run = 0
				}
			}
			rows = append(rows, strings.Join(lens, "+"))
		}
		return how + ", lengths " + strings.Join(rows, " | ")
	}
	lo, hi := slices.Min(vals), slices.Max(vals)
	return fmt.Sprintf("%s, %d values in [%.4g, %.4g] (--seed reproduces them)", how, len(vals), lo, hi)
}

// SampleRows picks n query rows of sq (all when n >= sq): the first, the
// last, the rows of the last (ragged) tile of blockM rows, and random ones,
// in increasing order.
func SampleRows(rng *rand.Rand, sq, blockM, n int) []int {
	if n >= sq {
		n = sq
	}
	pick := map[int]bool{0: true, sq - 1: true}
	for i := (sq - 1) / blockM * blockM; i < sq && len(pick) < n; i++ {
		pick[i] = true
	}
	for len(pick) < n {
		pick[rng.IntN(sq)] = true
	}
	rows := make([]int, 0, len(pick))
	for i := range pick {
		rows = append(rows, i)
	}
	slices.Sort(rows)
	return rows
}
