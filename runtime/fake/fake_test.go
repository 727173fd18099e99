package fake

import (
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/maskc/maskc/runtime/backend"
)

func TestMemoryBounds(t *testing.T) {
	b := New()
	p, err := b.Alloc(100)
	if err != nil {
		t.Fatal(err)
	}
	q, err := b.Alloc(8)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		ptr  backend.DevicePtr
		n    int64
		ok   bool
	}{
		{"whole allocation", p, 100, true},
		{"interior", p + 10, 90, true},
		{"one past the end", p + 10, 91, false},
		{"gap between allocations", p + 100, 1, false},
		{"below every allocation", p - 1, 1, false},
		{"second allocation", q, 8, true},
		{"negative length", p, -1, false},
	}
	for _, tc := range tests {
		_, err := b.Bytes(tc.ptr, tc.n)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err %v", tc.name, err)
		}
	}
	if err := b.Free(p + 1); err == nil {
		t.Error("freeing an interior pointer succeeded")
	}
	if err := b.Free(p); err != nil {
		t.Fatal(err)
	}
	if err := b.CopyHtoD(p, []byte{1}); err == nil {
		t.Error("write after free succeeded")
	}
	if err := b.Free(p); err == nil {
		t.Error("double free succeeded")
	}
}

func TestCopiesAndMemset(t *testing.T) {
	b := New()
	p, _ := b.Alloc(4)
	q, _ := b.Alloc(4)
	if err := b.CopyHtoD(p, []byte{1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	if err := b.CopyDtoD(q, p, 4); err != nil {
		t.Fatal(err)
	}
	if err := b.Memset(q, 9, 2); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4)
	if err := b.CopyDtoH(got, q); err != nil {
		t.Fatal(err)
	}
	if string(got) != "\x09\x09\x03\x04" {
		t.Errorf("got %v", got)
	}
}

func TestCompilerFollowsLineDirectives(t *testing.T) {
	c, _ := New().Compiler()
	src := strings.Join([]string{
		`extern "C" __global__ void first(int* x) {}`,
		`#line 10 "a.flex"`,
		`#error first problem`,
		`x`,
		`#error second problem`,
		`#line 3`,
		`#error third problem`,
		`#ifndef X`,
		`#if defined(Y)`,
		`#error conditional, not evaluated`,
		`#endif`,
		`#endif`,
	}, "\n")
	_, err := c.Compile(backend.CompileRequest{Source: src, Name: "k.cu"})
	var ce *backend.CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("want a CompileError, got %v", err)
	}
	for _, want := range []string{"a.flex(10): error: first problem", "a.flex(12): error: second problem", "a.flex(3): error: third problem"} {
		if !strings.Contains(ce.Log, want) {
			t.Errorf("log lacks %q:\n%s", want, ce.Log)
		}
	}
	if strings.Contains(ce.Log, "conditional") {
		t.Errorf("an #error inside #if was reported:\n%s", ce.Log)
	}
}

func TestModulesAndLaunch(t *testing.T) {
	b := New()
	c, _ := b.Compiler()
	img, err := c.Compile(backend.CompileRequest{Source: "extern \"C\" __global__ void __launch_bounds__(256, 1)\n    inc(int* x, int n) {}\n" + `extern "C" __global__ __launch_bounds__(64) void unregistered() {}`})
	if err != nil {
		t.Fatal(err)
	}
	m, err := b.LoadModule(img)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Function(m, "unregistered"); err == nil {
		t.Error("lookup of a kernel without a Go implementation succeeded")
	}
	if _, err := b.Function(m, "absent"); err == nil {
		t.Error("lookup of a kernel the module lacks succeeded")
	}
	b.Register("inc", func(mem *Backend, l Launch) error {
		p := Param[backend.DevicePtr](l.Params, 0)
		n := Param[int32](l.Params, 1)
		data, err := mem.Bytes(p, int64(n))
		if err != nil {
			return err
		}
		for i := range data {
			data[i]++
		}
		return nil
	})
	f, err := b.Function(m, "inc")
	if err != nil {
		t.Fatal(err)
	}
	p, _ := b.Alloc(3)
	n := int32(3)
	params := []unsafe.Pointer{unsafe.Pointer(&p), unsafe.Pointer(&n)}
	one := backend.Dim3{X: 1, Y: 1, Z: 1}
	if err := b.Launch(f, one, one, 0, 0, unsafe.Pointer(&params[0])); err != nil {
		t.Fatal(err)
	}
	n = 4 // out of bounds: the kernel's error comes back
	if err := b.Launch(f, one, one, 0, 0, unsafe.Pointer(&params[0])); err == nil {
		t.Error("out-of-bounds kernel access was not reported")
	}
	got := make([]byte, 3)
	b.CopyDtoH(got, p)
	if string(got) != "\x01\x01\x01" || b.Launches() != 1 {
		t.Errorf("memory %v after %d launches", got, b.Launches())
	}
	if err := b.Launch(backend.Function(99), one, one, 0, 0, unsafe.Pointer(&params[0])); err == nil {
		t.Error("launch of an unknown function succeeded")
	}
	if err := b.UnloadModule(m); err != nil {
		t.Fatal(err)
	}
	if _, err := b.LoadModule(backend.Image{Kind: backend.ImageCUBIN, Code: []byte("x")}); err == nil {
		t.Error("loaded a non-fake image")
	}
}

func TestEvents(t *testing.T) {
	b := New()
	e0, _ := b.NewEvent()
	e1, _ := b.NewEvent()
	if _, err := b.ElapsedMs(e0, e1); err == nil {
		t.Error("elapsed time of unrecorded events")
	}
	b.RecordEvent(e0, 0)
	b.RecordEvent(e1, 0)
	if ms, err := b.ElapsedMs(e0, e1); err != nil || ms < 0 {
		t.Errorf("elapsed %v, %v", ms, err)
	}
}

// TestTensorMapEncoder: the fake records every encoding, writes its
// recognisable bytes (EncodedTensorMap) and fails as the hook or the
// switch says.
func TestTensorMapEncoder(t *testing.T) {
	b := New()
	m := backend.TiledTensorMap{DataType: backend.TensorMapBFloat16, Rank: 4, Address: 0x10000,
		Dims: [5]uint64{128, 300, 8, 2}, Strides: [4]uint64{2048, 256, 614400}, Box: [5]uint32{64, 128, 1, 1}}
	refused := errors.New("refused")
	tests := []struct {
		name string
		on   bool
		fail func(backend.TiledTensorMap) error
		rank int
		err  error // nil: encoded
	}{
		{"encoded", true, nil, 4, nil},
		{"hook refuses", true, func(backend.TiledTensorMap) error { return refused }, 4, refused},
		{"off", false, nil, 4, errNoTensorMaps},
		{"rank 6 refused", true, nil, 6, nil},
	}
	for i, tc := range tests {
		b.SetTensorMaps(tc.on, tc.fail)
		if b.CanEncodeTensorMaps() != tc.on {
			t.Errorf("%s: CanEncodeTensorMaps %v", tc.name, !tc.on)
		}
		mm := m
		mm.Rank = tc.rank
		var out [backend.TensorMapBytes]byte
		err := b.EncodeTensorMap(&out, mm)
		calls := b.TensorMapCalls()
		if len(calls) != i+1 || calls[i].Map != mm || calls[i].Err != err {
			t.Fatalf("%s: calls %+v", tc.name, calls)
		}
		switch {
		case tc.rank > backend.TensorMapMaxRank:
			if err == nil {
				t.Errorf("%s: encoded", tc.name)
			}
		case tc.err != nil:
			if err != tc.err || out != ([backend.TensorMapBytes]byte{}) {
				t.Errorf("%s: %v, out % x", tc.name, err, out[:16])
			}
		case err != nil || out != EncodedTensorMap(m.Address, i+1) || string(out[:8]) != TensorMapMagic || out[127] != TensorMapFill:
			t.Errorf("%s: %v, out % x", tc.name, err, out[:24])
		}
	}
}
