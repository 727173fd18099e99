package host

import (
	"encoding/binary"
	"math"
	"testing"
)

// TestHalfRoundTripsEveryValue widens every 16-bit pattern and rounds it
// back: each non-NaN value must come back bit for bit.
func TestHalfRoundTripsEveryValue(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		if f := FP16ToFloat32(h); !math.IsNaN(float64(f)) {
			if got := FP16FromFloat32(f); got != h {
				t.Fatalf("fp16 %#04x -> %v -> %#04x", h, f, got)
			}
		}
		if f := BF16ToFloat32(h); !math.IsNaN(float64(f)) {
			if got := BF16FromFloat32(f); got != h {
				t.Fatalf("bf16 %#04x -> %v -> %#04x", h, f, got)
			}
		}
	}
}

func TestHalfRounding(t *testing.T) {
	tests := []struct {
		name string
		half Half
		in   float32
		want uint16
	}{
		{"fp16 one", FP16, 1, 0x3c00},
		{"fp16 max", FP16, 65504, 0x7bff},
		{"fp16 overflow", FP16, 65520, 0x7c00},
		{"fp16 below overflow rounds down", FP16, 65519, 0x7bff},
		{"fp16 tie to even down", FP16, 1 + 1.0/2048, 0x3c00},
		{"fp16 tie to even up", FP16, 1 + 3.0/2048, 0x3c02},
		{"fp16 smallest subnormal", FP16, 1.0 / (1 << 24), 0x0001},
		{"fp16 half the smallest subnormal ties to zero", FP16, 1.0 / (1 << 25), 0x0000},
		{"fp16 subnormal rounds up to normal", FP16, 6.1035156e-05 - 1e-12, 0x0400},
		{"fp16 negative", FP16, -2, 0xc000},
		{"fp16 inf", FP16, float32(math.Inf(-1)), 0xfc00},
		{"bf16 one", BF16, 1, 0x3f80},
		{"bf16 tie to even down", BF16, 1 + 1.0/256, 0x3f80},
		{"bf16 tie to even up", BF16, 1 + 3.0/256, 0x3f82},
		{"bf16 overflow to inf", BF16, math.MaxFloat32, 0x7f80},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.half.Encode(float64(tc.in)); got != tc.want {
				t.Fatalf("Encode(%v) = %#04x, want %#04x", tc.in, got, tc.want)
			}
		})
	}
	for _, h := range []Half{BF16, FP16} {
		if x := h.Decode(NaN); !math.IsNaN(float64(x)) {
			t.Errorf("%s: NaN pattern decodes to %v", h, x)
		}
		if x := h.Decode(h.Encode(math.NaN())); !math.IsNaN(float64(x)) {
			t.Errorf("%s: NaN does not survive", h)
		}
	}
}

func TestParseHalf(t *testing.T) {
	for name, want := range map[string]Half{"bf16": BF16, "fp16": FP16, "f16": FP16} {
		if got, err := ParseHalf(name); err != nil || got != want {
			t.Errorf("ParseHalf(%s) = %v, %v", name, got, err)
		}
	}
	if _, err := ParseHalf("fp8"); err == nil {
		t.Error("ParseHalf(fp8) succeeded")
	}
}

func TestEncodeBuffer(t *testing.T) {
	tests := []struct {
		dtype string
		in    []float64
		bytes []byte
		seen  []float64
		err   bool
	}{
		{dtype: "i32", in: []float64{0, -1, 7}, bytes: []byte{0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 7, 0, 0, 0}, seen: []float64{0, -1, 7}},
		{dtype: "i64", in: []float64{1 << 40}, bytes: []byte{0, 0, 0, 0, 0, 1, 0, 0}, seen: []float64{1 << 40}},
		{dtype: "bool", in: []float64{1, 0}, bytes: []byte{1, 0}, seen: []float64{1, 0}},
		{dtype: "f32", in: []float64{0.1}, bytes: binary.LittleEndian.AppendUint32(nil, math.Float32bits(0.1)), seen: []float64{float64(float32(0.1))}},
		{dtype: "f64", in: []float64{0.1}, bytes: binary.LittleEndian.AppendUint64(nil, math.Float64bits(0.1)), seen: []float64{0.1}},
		{dtype: "bf16", in: []float64{1}, bytes: []byte{0x80, 0x3f}, seen: []float64{1}},
		{dtype: "f16", in: []float64{1}, bytes: []byte{0x00, 0x3c}, seen: []float64{1}},
		{dtype: "u8", in: []float64{0, 255, 7}, bytes: []byte{0, 0xff, 7}, seen: []float64{0, 255, 7}},
		{dtype: "i8", in: []float64{-128, 127, -1}, bytes: []byte{0x80, 0x7f, 0xff}, seen: []float64{-128, 127, -1}},
		{dtype: "i16", in: []float64{-2, 300}, bytes: []byte{0xfe, 0xff, 0x2c, 0x01}, seen: []float64{-2, 300}},
		{dtype: "u8", in: []float64{256}, err: true},
		{dtype: "u8", in: []float64{-1}, err: true},
		{dtype: "i8", in: []float64{128}, err: true},
		{dtype: "i16", in: []float64{-32769}, err: true},
		{dtype: "i16", in: []float64{1.5}, err: true},
		{dtype: "i32", in: []float64{0.5}, err: true},
		{dtype: "i32", in: []float64{1 << 31}, err: true},
		{dtype: "bool", in: []float64{2}, err: true},
		{dtype: "u16", in: []float64{1}, err: true},
	}
	for _, tc := range tests {
		data, seen, err := EncodeBuffer(tc.dtype, tc.in)
		if (err != nil) != tc.err {
			t.Errorf("%s %v: error %v", tc.dtype, tc.in, err)
			continue
		}
		if tc.err {
			continue
		}
		if string(data) != string(tc.bytes) || len(seen) != len(tc.seen) {
			t.Errorf("%s %v: bytes %v, want %v", tc.dtype, tc.in, data, tc.bytes)
			continue
		}
		for i := range seen {
			if seen[i] != tc.seen[i] {
				t.Errorf("%s %v: kernel sees %v, want %v", tc.dtype, tc.in, seen, tc.seen)
			}
		}
	}
}
