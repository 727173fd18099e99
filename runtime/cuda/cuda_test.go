package cuda

import (
	"errors"
	"strings"
	"testing"

	"github.com/maskc/maskc/runtime/backend"
	"github.com/maskc/maskc/runtime/internal/dl"
)

// TestOpenErrorsAreClear checks that without a CUDA driver the error lists
// every path tried; where a device exists it checks the device instead.
func TestOpenErrorsAreClear(t *testing.T) {
	b, err := Open(0)
	if err == nil {
		defer b.Close()
		if info := b.Device(); info.Backend != "cuda" || !strings.HasPrefix(info.Arch, "sm_") || info.WarpSize != 32 {
			t.Fatalf("opened a device with info %+v", info)
		}
		return
	}
	var nf *dl.NotFoundError
	if errors.As(err, &nf) {
		for _, name := range driverNames {
			if !strings.Contains(err.Error(), name) {
				t.Errorf("search error does not list %s: %v", name, err)
			}
		}
		return
	}
	if !strings.Contains(err.Error(), "no usable device") {
		t.Errorf("error does not say what failed: %v", err)
	}
}

// TestCompilerOrSearchError compiles with NVRTC where it is installed (no
// GPU needed) and otherwise checks the error lists the libraries searched.
func TestCompilerOrSearchError(t *testing.T) {
	c, err := NewCompiler("sm_90")
	if err != nil {
		var nf *dl.NotFoundError
		if !errors.As(err, &nf) || !strings.Contains(err.Error(), nvrtcNames[0]) {
			t.Fatalf("error without a search list: %v", err)
		}
		return
	}
	img, err := c.Compile(backend.CompileRequest{Source: `extern "C" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }`})
	if err != nil || img.Kind != backend.ImageCUBIN || len(img.Code) == 0 {
		t.Fatalf("compile: %s image of %d bytes, %v", img.Kind, len(img.Code), err)
	}
	_, err = c.Compile(backend.CompileRequest{Source: "#line 7 \"k.flex\"\n__device__ int f() { return undefined_name; }\n"})
	var ce *backend.CompileError
	if !errors.As(err, &ce) || !strings.Contains(ce.Log, "k.flex(7): error") {
		t.Fatalf("want a compile error naming k.flex(7), got %v", err)
	}
}
