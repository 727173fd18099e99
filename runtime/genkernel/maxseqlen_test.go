package genkernel

import (
	"testing"

	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/runtime"
)

// TestMaxSeqLenAgrees keeps the launcher's length limit equal to the bound
// the code generator's 32-bit narrowing assumes: a longer sequence would
// overflow generated index arithmetic silently.
func TestMaxSeqLenAgrees(t *testing.T) {
	if runtime.MaxSeqLen != codegen.MaxSeqLen {
		t.Fatalf("runtime.MaxSeqLen = %d, codegen.MaxSeqLen = %d", runtime.MaxSeqLen, codegen.MaxSeqLen)
	}
}
