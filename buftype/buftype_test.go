package buftype

import (
	"fmt"
	"strings"
	"testing"

	"github.com/maskc/maskc/internal/golden"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTable checks each row against the facts it states about the type:
// an integer's range is what its size and signedness hold, the C storage
// type is as wide as the element, and only i32 and i64 hold document ids.
func TestTable(t *testing.T) {
	cSize := map[string]int{"unsigned char": 1, "signed char": 1, "short": 2, "unsigned short": 2, "int": 4, "float": 4, "long long": 8, "double": 8}
	for _, d := range All {
		t.Run(d.Name, func(t *testing.T) {
			assert.Same(t, d, Lookup(d.Name))
			assert.Equal(t, d.Size, cSize[d.CStorage], "C storage %s", d.CStorage)
			assert.True(t, strings.HasPrefix(d.Torch, "torch."))
			assert.Contains(t, d.CRead, "%s")
			if d.Kind != Int {
				assert.Zero(t, d.Min)
				assert.Zero(t, d.Max)
				assert.False(t, d.Segments)
				return
			}
			bits := uint(8 * d.Size)
			if d.Signed {
				assert.Equal(t, int64(-1)<<(bits-1), d.Min)
				assert.Equal(t, int64(uint64(1)<<(bits-1)-1), d.Max)
			} else {
				assert.Zero(t, d.Min)
				assert.Equal(t, int64(uint64(1)<<bits-1), d.Max)
			}
			want := CInt32
			if bits > 32 {
				want = CInt64
			}
			assert.Equal(t, want, d.CValue, "an int of %d bits reads as", bits)
		})
	}
}

func TestLookups(t *testing.T) {
	tests := []struct {
		name          string
		isInt, segOK  bool
		lo, hi        int64
		rangeOK, know bool
	}{
		{"u8", true, false, 0, 255, true, true},
		{"i8", true, false, -128, 127, true, true},
		{"i16", true, false, -32768, 32767, true, true},
		{"i32", true, true, -1 << 31, 1<<31 - 1, true, true},
		{"i64", true, true, -1 << 63, 1<<63 - 1, true, true},
		{"f16", false, false, 0, 0, false, true},
		{"bf16", false, false, 0, 0, false, true},
		{"bool", false, false, 0, 0, false, true},
		{"u16", false, false, 0, 0, false, false},
		{"", false, false, 0, 0, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.know, Lookup(tt.name) != nil)
			assert.Equal(t, tt.isInt, IsInt(tt.name))
			assert.Equal(t, tt.segOK, CanSegment(tt.name))
			lo, hi, ok := IntRange(tt.name)
			assert.Equal(t, []any{tt.lo, tt.hi, tt.rangeOK}, []any{lo, hi, ok})
		})
	}
	assert.Equal(t, "u8, i8, i16, i32, i64, f16, bf16, f32, f64, bool", Names())
	assert.Equal(t, "i32 or i64", SegmentNames())
}

// TestPythonTable keeps python/maskc/dtypes.py, the Python package's copy
// of the table, generated from All (`go test ./buftype -update`).
func TestPythonTable(t *testing.T) {
	var b strings.Builder
	b.WriteString(`"""maskc's buffer element types, generated from buftype/buftype.go (the one table of them)
by ` + "`go test ./buftype -update`" + `; do not edit."""

# TORCH maps each buffer element type to the torch dtype's attribute name.
TORCH = {
`)
	for _, d := range All {
		fmt.Fprintf(&b, "    %q: %q,\n", d.Name, strings.TrimPrefix(d.Torch, "torch."))
	}
	b.WriteString("}\n\n# SIZE is the size of one element in bytes.\nSIZE = {")
	for i, d := range All {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q: %d", d.Name, d.Size)
	}
	b.WriteString("}\n\n# KIND is what a read gives in a mod: int, float or bool.\nKIND = {")
	for i, d := range All {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q: %q", d.Name, [...]string{"int", "float", "bool"}[d.Kind])
	}
	b.WriteString("}\n\n# SEGMENTS are the types a `segments` buffer (document ids) may have.\nSEGMENTS = (")
	for _, d := range All {
		if d.Segments {
			fmt.Fprintf(&b, "%q, ", d.Name)
		}
	}
	b.WriteString(")\n")
	got := strings.Replace(b.String(), ", )", ")", 1)
	require.NotEmpty(t, got)
	golden.Check(t, "../python/maskc/dtypes.py", []byte(got))
}

// TestFromTorch: torch's dtype names and aliases map to the table's types.
func TestFromTorch(t *testing.T) {
	for torch, want := range map[string]string{"torch.int32": "i32", "torch.int": "i32", "torch.long": "i64", "torch.int64": "i64",
		"torch.bool": "bool", "torch.float": "f32", "torch.float64": "f64", "torch.half": "f16", "torch.bfloat16": "bf16", "torch.uint8": "u8"} {
		d := FromTorch(torch)
		if d == nil || d.Name != want {
			t.Errorf("FromTorch(%q) = %v, want %s", torch, d, want)
		}
	}
	if d := FromTorch("torch.complex64"); d != nil {
		t.Errorf("FromTorch(torch.complex64) = %s, want nil", d.Name)
	}
}
