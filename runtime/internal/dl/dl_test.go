package dl

import (
	"errors"
	"strings"
	"testing"

	"github.com/ebitengine/purego"
)

func TestOpenListsEveryAttempt(t *testing.T) {
	_, err := Open("test library", []string{"libdoes-not-exist-1.so", "libdoes-not-exist-2.so"}, []string{t.TempDir(), "/no/such/dir"})
	var nf *NotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("want *NotFoundError, got %v", err)
	}
	// two bare names, then both names in the one existing directory
	if len(nf.Attempts) != 4 {
		t.Errorf("got %d attempts, want 4: %v", len(nf.Attempts), err)
	}
	for _, want := range []string{"test library", "libdoes-not-exist-1.so", "libdoes-not-exist-2.so"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q: %v", want, err)
		}
	}
}

func libc(t *testing.T) *Library {
	l, err := Open("C library", []string{"libc.so.6"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestBindReportsMissingSymbols(t *testing.T) {
	l := libc(t)
	var strlen func(string) uint64
	var missing func()
	err := l.BindAll([]Binding{Fn(&strlen, "strlen"), Fn(&missing, "no_such_symbol_v2", "no_such_symbol")})
	if err == nil || !strings.Contains(err.Error(), "no_such_symbol_v2|no_such_symbol") {
		t.Fatalf("want an error naming the missing symbol, got %v", err)
	}
	if strlen("maskc") != 5 {
		t.Fatal("bound strlen gives the wrong answer")
	}
	name, err := l.BindFirst(&strlen, "strlen_v9", "strlen")
	if err != nil || name != "strlen" {
		t.Fatalf("BindFirst = %q, %v", name, err)
	}
}

func TestCStrings(t *testing.T) {
	l := libc(t)
	var strlen func(p uintptr) uint64
	if err := l.Bind(&strlen, "strlen"); err != nil {
		t.Fatal(err)
	}
	cs := NewCStrings([]string{"--gpu-architecture=sm_90", "", "-std=c++17"})
	defer cs.Free()
	ptrs := []uintptr{cs.ptrs[0], cs.ptrs[1], cs.ptrs[2]}
	for i, want := range []uint64{24, 0, 10} {
		if got := strlen(ptrs[i]); got != want {
			t.Errorf("strlen(option %d) = %d, want %d", i, got, want)
		}
	}
	if cs.ptrs[3] != 0 || cs.Len() != 3 {
		t.Error("array is not NULL-terminated or has the wrong length")
	}
}

// TestCallDoesNotAllocate guards the launch path: cuLaunchKernel and
// hipModuleLaunchKernel are called through Call with eleven integer
// arguments, cuTensorMapEncodeTiled with twelve, which must not allocate.
func TestCallDoesNotAllocate(t *testing.T) {
	labs, err := libc(t).Sym("labs")
	if err != nil {
		t.Fatal(err)
	}
	for _, extra := range [][]uintptr{{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}} {
		args := append([]uintptr{uintptr(^uint64(41))}, extra...)
		var r uintptr
		allocs := testing.AllocsPerRun(1000, func() {
			r = Call(labs, args...)
		})
		if r != 42 {
			t.Fatalf("labs(-42) = %d", r)
		}
		if allocs != 0 {
			t.Errorf("Call with %d arguments allocates %v times per call", len(args), allocs)
		}
	}
}

// TestCallPassesTwelveArguments: every one of twelve integer arguments
// (cuTensorMapEncodeTiled's count: six in registers, six on the stack on
// x86-64) reaches the C function in order, full 64-bit values included.
func TestCallPassesTwelveArguments(t *testing.T) {
	var got [12]uintptr
	fn := purego.NewCallback(func(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11 uintptr) uintptr {
		got = [12]uintptr{a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11}
		return a0 ^ a11
	})
	var want [12]uintptr
	for i := range want {
		want[i] = uintptr(0x1000_0000_0000_0001) * uintptr(i+1)
	}
	r := Call(fn, want[:]...)
	if got != want {
		t.Errorf("the function received %#x, want %#x", got, want)
	}
	if r != want[0]^want[11] {
		t.Errorf("result %#x, want %#x", r, want[0]^want[11])
	}
}
