package rtc

import (
	"strings"
	"testing"

	"github.com/maskc/maskc/runtime/backend"
	"github.com/maskc/maskc/runtime/internal/dl"
)

// TestBindReportsEveryMissingFunction binds against a library that is not a
// compiler: the error must name the whole program API, outputs included.
// (Compiling through a real library is tested by runtime/hip on any machine
// with ROCm and by runtime/cuda with NVRTC.)
func TestBindReportsEveryMissingFunction(t *testing.T) {
	libc, err := dl.Open("C library", []string{"libc.so.6"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Bind(libc, "nvrtc", NewOutput(backend.ImageCUBIN, "CUBIN", false))
	if err == nil {
		t.Fatal("bound NVRTC in libc")
	}
	for _, fn := range []string{"nvrtcVersion", "nvrtcCreateProgram", "nvrtcCompileProgram", "nvrtcGetProgramLog", "nvrtcDestroyProgram", "nvrtcGetCUBINSize", "nvrtcGetCUBIN"} {
		if !strings.Contains(err.Error(), fn) {
			t.Errorf("error does not name %s: %v", fn, err)
		}
	}
}
