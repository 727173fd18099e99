// Package buftype is the one table of the element types a .flex buffer may
// declare (`buffer doc: i32[KV]`): for each, its size, how a generated kernel
// stores and reads it, its torch dtype, whether it is an integer, float or
// bool, and the range an integer type holds. The checker, the reference
// evaluator, the code generator, the kernel manifest, the Go runtime and the
// test harness all read this table, so a new buffer dtype is one entry here
// (plus tests); the Python package reads the generated copy
// python/maskc/dtypes.py (`go test ./buftype -update` rewrites it).
package buftype

import (
	"math"
	"strings"
)

// Kind is what a read of a buffer element gives in the language.
type Kind int

const (
	// Int elements read as the language's int.
	Int Kind = iota
	// Float elements read as the language's float.
	Float
	// Bool elements read as the language's bool (stored 0 or 1).
	Bool
)

// CValue is the C type a generated kernel's accessor returns for an element.
type CValue int

const (
	// CInt32 is C int: every integer type of at most 32 bits.
	CInt32 CValue = iota
	// CInt64 is C long long.
	CInt64
	// CFloat32 is C float: f32 and the 16-bit floats, widened exactly.
	CFloat32
	// CFloat64 is C double.
	CFloat64
	// CBool is C bool.
	CBool
)

// DType describes one buffer element type.
type DType struct {
	// Name is the spelling in a .flex declaration, e.g. "i32".
	Name string
	// Size is the size of one element in bytes.
	Size int
	// Kind is the language type a read gives.
	Kind Kind
	// Signed reports, for an Int, whether the type is two's complement
	// signed (else unsigned).
	Signed bool
	// Min and Max bound the values of an Int type (both 0 otherwise).
	Min, Max int64
	// CStorage is the C type of one stored element in a generated kernel.
	CStorage string
	// CValue is the C type the kernel's accessor returns.
	CValue CValue
	// CRead is the C format turning the stored element expression %s into
	// the accessor's value (the 16-bit floats widen through runtime.h).
	CRead string
	// CZero is the value an out-of-range read returns.
	CZero string
	// Torch is the torch dtype, e.g. "torch.int32".
	Torch string
	// Segments reports whether a `segments` buffer (document ids, which
	// the kernels binary-search) may have this type.
	Segments bool
}

// All lists the buffer element types in the order hints name them.
var All = []*DType{
	{Name: "u8", Size: 1, Kind: Int, Min: 0, Max: math.MaxUint8, CStorage: "unsigned char", CValue: CInt32, CRead: "%s", CZero: "0", Torch: "torch.uint8"},
	{Name: "i8", Size: 1, Kind: Int, Signed: true, Min: math.MinInt8, Max: math.MaxInt8, CStorage: "signed char", CValue: CInt32, CRead: "%s", CZero: "0", Torch: "torch.int8"},
	{Name: "i16", Size: 2, Kind: Int, Signed: true, Min: math.MinInt16, Max: math.MaxInt16, CStorage: "short", CValue: CInt32, CRead: "%s", CZero: "0", Torch: "torch.int16"},
	{Name: "i32", Size: 4, Kind: Int, Signed: true, Min: math.MinInt32, Max: math.MaxInt32, CStorage: "int", CValue: CInt32, CRead: "%s", CZero: "0", Torch: "torch.int32", Segments: true},
	{Name: "i64", Size: 8, Kind: Int, Signed: true, Min: math.MinInt64, Max: math.MaxInt64, CStorage: "long long", CValue: CInt64, CRead: "%s", CZero: "0", Torch: "torch.int64", Segments: true},
	{Name: "f16", Size: 2, Kind: Float, CStorage: "unsigned short", CValue: CFloat32, CRead: "maskc_f16_to_f32(%s)", CZero: "0.0f", Torch: "torch.float16"},
	{Name: "bf16", Size: 2, Kind: Float, CStorage: "unsigned short", CValue: CFloat32, CRead: "maskc_bf16_to_f32(%s)", CZero: "0.0f", Torch: "torch.bfloat16"},
	{Name: "f32", Size: 4, Kind: Float, CStorage: "float", CValue: CFloat32, CRead: "%s", CZero: "0.0f", Torch: "torch.float32"},
	{Name: "f64", Size: 8, Kind: Float, CStorage: "double", CValue: CFloat64, CRead: "%s", CZero: "0.0", Torch: "torch.float64"},
	{Name: "bool", Size: 1, Kind: Bool, CStorage: "unsigned char", CValue: CBool, CRead: "(%s != 0)", CZero: "false", Torch: "torch.bool"},
}

var byName = func() map[string]*DType {
	m := make(map[string]*DType, len(All))
	for _, d := range All {
		m[d.Name] = d
	}
	return m
}()

// Lookup returns the element type named name, or nil.
func Lookup(name string) *DType { return byName[name] }

// torchAliases are torch's other spellings of the dtypes in All.
var torchAliases = map[string]string{
	"torch.long": "torch.int64", "torch.int": "torch.int32", "torch.short": "torch.int16",
	"torch.float": "torch.float32", "torch.double": "torch.float64", "torch.half": "torch.float16",
}

// FromTorch returns the element type of the torch dtype named name
// (`torch.int32`, or an alias such as `torch.long`), or nil.
func FromTorch(name string) *DType {
	if a, ok := torchAliases[name]; ok {
		name = a
	}
	for _, d := range All {
		if d.Torch == name {
			return d
		}
	}
	return nil
}

// Names lists the element type names, comma-separated, for hints.
func Names() string {
	names := make([]string, len(All))
	for i, d := range All {
		names[i] = d.Name
	}
	return strings.Join(names, ", ")
}

// SegmentNames lists the types a `segments` buffer may have, for hints
// ("i32 or i64").
func SegmentNames() string {
	var names []string
	for _, d := range All {
		if d.Segments {
			names = append(names, d.Name)
		}
	}
	return strings.Join(names, " or ")
}

// CanSegment reports whether a `segments` buffer may have type name.
func CanSegment(name string) bool {
	d := byName[name]
	return d != nil && d.Segments
}

// IsInt reports whether name is an integer element type.
func IsInt(name string) bool {
	d := byName[name]
	return d != nil && d.Kind == Int
}

// IntRange is the range of values an integer element type holds; ok is
// false for other types.
func IntRange(name string) (lo, hi int64, ok bool) {
	d := byName[name]
	if d == nil || d.Kind != Int {
		return 0, 0, false
	}
	return d.Min, d.Max, true
}
