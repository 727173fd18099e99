package hip

import (
	"errors"
	"strings"
	"testing"

	"github.com/maskc/maskc/runtime/backend"
	"github.com/maskc/maskc/runtime/internal/dl"
)

const vecAdd = `
extern "C" __global__ void vec_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
`

// TestCompilerOrSearchError compiles a kernel with hiprtc where ROCm is
// installed (no GPU is needed) and otherwise checks the error lists the
// libraries searched.
func TestCompilerOrSearchError(t *testing.T) {
	c, err := NewCompiler("gfx90a")
	if err != nil {
		var nf *dl.NotFoundError
		if !errors.As(err, &nf) || len(nf.Attempts) == 0 {
			t.Fatalf("error without a search list: %v", err)
		}
		return
	}
	if !strings.HasPrefix(c.Version(), "hiprtc ") {
		t.Errorf("version %q", c.Version())
	}
	img, err := c.Compile(backend.CompileRequest{Source: vecAdd, Name: "vec_add.hip"})
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	if img.Kind != backend.ImageHSACO || len(img.Code) < 4 || string(img.Code[1:4]) != "ELF" {
		t.Fatalf("got %s image of %d bytes", img.Kind, len(img.Code))
	}
	_, err = c.Compile(backend.CompileRequest{Source: "#line 7 \"k.flex\"\nint f() { return undefined_name; }\n", Name: "bad.hip"})
	var ce *backend.CompileError
	if !errors.As(err, &ce) || !strings.Contains(ce.Log, "k.flex:7:") {
		t.Fatalf("want a compile error naming k.flex:7, got %v", err)
	}
}

func TestOldHiprtcRefusesNewTargets(t *testing.T) {
	c := &hiprtc{lib: &hiprtcLib{runtimeVersion: 50221153}}
	for arch, ok := range map[string]bool{"gfx90a": true, "gfx908": true, "gfx942": false, "gfx940": false, "gfx950": false} {
		if err := c.supports(arch); (err == nil) != ok {
			t.Errorf("ROCm 5.2 %s: err %v", arch, err)
		}
	}
	c.lib.runtimeVersion = 60200000
	if err := c.supports("gfx942"); err != nil {
		t.Errorf("ROCm 6.2 gfx942: %v", err)
	}
	if err := c.supports("gfx950"); err == nil {
		t.Error("ROCm 6.2 accepted gfx950")
	}
}
