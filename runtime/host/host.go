// Package host prepares host-side data for device tensors and reads results
// back: conversion between float32 and the 16-bit floating-point formats
// bf16 and fp16 (IEEE binary16), rounding to nearest even as the GPUs do,
// and the byte encoding of the element types a .flex buffer may declare.
package host

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/maskc/maskc/buftype"
	"github.com/maskc/maskc/hipsrc"
)

// BF16FromFloat32 rounds f to the nearest bf16 (ties to even); NaN stays a
// quiet NaN.
func BF16FromFloat32(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x0040
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// BF16ToFloat32 widens a bf16 exactly.
func BF16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// FP16FromFloat32 rounds f to the nearest IEEE binary16 (ties to even),
// overflowing to infinity and underflowing through the subnormals to zero.
func FP16FromFloat32(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	switch {
	case e >= 0x1f:
		return sign | 0x7c00
	case e <= 0:
		if e < -10 {
			return sign
		}
		// Subnormal: the value in units of 2^-24, rounded.
		return sign | uint16(roundShift(mant|0x800000, uint32(14-e)))
	}
	// A carry out of the mantissa correctly bumps the exponent (to infinity
	// at the top).
	return sign | uint16(uint32(e)<<10+roundShift(mant, 13))
}

// roundShift is x >> s rounded to nearest, ties to even (s >= 1).
func roundShift(x, s uint32) uint32 {
	half := uint32(1) << (s - 1)
	r, rem := x>>s, x&(1<<s-1)
	if rem > half || rem == half && r&1 == 1 {
		r++
	}
	return r
}

// FP16ToFloat32 widens an IEEE binary16 exactly.
func FP16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch exp {
	case 0:
		v := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			v = -v
		}
		return v
	case 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp-15+127)<<23 | mant<<13)
}

// Half is a 16-bit floating-point format of attention tensors.
type Half int

const (
	// BF16 is bfloat16: 8 exponent and 7 mantissa bits.
	BF16 Half = iota
	// FP16 is IEEE binary16: 5 exponent and 10 mantissa bits.
	FP16
)

// ParseHalf maps the .flex dtype names "bf16" and "fp16" (also "f16") to
// a Half.
func ParseHalf(name string) (Half, error) {
	switch name {
	case "bf16":
		return BF16, nil
	case "fp16", "f16":
		return FP16, nil
	}
	return 0, fmt.Errorf("dtype %q is not bf16 or fp16", name)
}

// String returns "bf16" or "fp16".
func (h Half) String() string {
	if h == FP16 {
		return "fp16"
	}
	return "bf16"
}

// Round converts x to the format and back: the value a kernel sees.
func (h Half) Round(x float64) float64 { return float64(h.Decode(h.Encode(x))) }

// Encode rounds x (through float32) to the format.
func (h Half) Encode(x float64) uint16 {
	if h == FP16 {
		return FP16FromFloat32(float32(x))
	}
	return BF16FromFloat32(float32(x))
}

// Decode widens one value of the format.
func (h Half) Decode(v uint16) float32 {
	if h == FP16 {
		return FP16ToFloat32(v)
	}
	return BF16ToFloat32(v)
}

// NaN is the all-ones bit pattern, a NaN in both formats; outputs are
// filled with it before a launch so that unwritten elements show.
const NaN uint16 = 0xffff

// ElemSize returns the bytes per element of a buffer element type
// (buftype.All), or 0 for an unknown one: the kernel ABI's
// hipsrc.BufferElemBytes.
func ElemSize(dtype string) int { return hipsrc.BufferElemBytes(dtype) }

// IsInt reports whether dtype is an integer type (buftype.IsInt).
func IsInt(dtype string) bool { return buftype.IsInt(dtype) }

// putInt stores v little-endian in len(p) bytes (two's complement,
// truncated to the width: the caller checked the range).
func putInt(p []byte, v int64) {
	for i := range p {
		p[i] = byte(v >> (8 * i))
	}
}

// EncodeBuffer lays out vals as a little-endian array of dtype, as the
// generated kernels read captured buffers, and returns the values as the
// kernel will see them (rounded to the type). Integers must be exact
// integers in the type's range, bools 0 or 1.
func EncodeBuffer(dtype string, vals []float64) (data []byte, seen []float64, err error) {
	d := buftype.Lookup(dtype)
	if d == nil {
		return nil, nil, fmt.Errorf("unknown buffer element type %q", dtype)
	}
	size := d.Size
	data = make([]byte, len(vals)*size)
	seen = make([]float64, len(vals))
	for i, x := range vals {
		p := data[i*size:]
		switch {
		case d.Kind == buftype.Bool:
			if x != 0 && x != 1 {
				return nil, nil, fmt.Errorf("value %d (%v) of a bool buffer is not 0 or 1", i, x)
			}
			p[0] = byte(x)
		case d.Kind == buftype.Int:
			lo, hi := d.Min, d.Max
			// A float64 holds the integers up to 2**53 exactly.
			flo, fhi := max(float64(lo), -(1<<53)), min(float64(hi), 1<<53)
			if x != math.Trunc(x) || x < flo || x > fhi {
				return nil, nil, fmt.Errorf("value %d (%v) of an %s buffer is not an integer in range", i, x, dtype)
			}
			putInt(p[:size], int64(x))
		case dtype == "f16":
			v := FP16.Encode(x)
			binary.LittleEndian.PutUint16(p, v)
			x = float64(FP16.Decode(v))
		case dtype == "bf16":
			v := BF16.Encode(x)
			binary.LittleEndian.PutUint16(p, v)
			x = float64(BF16.Decode(v))
		case dtype == "f32":
			binary.LittleEndian.PutUint32(p, math.Float32bits(float32(x)))
			x = float64(float32(x))
		case dtype == "f64":
			binary.LittleEndian.PutUint64(p, math.Float64bits(x))
		}
		seen[i] = x
	}
	return data, seen, nil
}
