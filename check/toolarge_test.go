package check

import (
	"fmt"
	"strings"
	"testing"
)

// TestTooLargeLetChain: a chain of lets that each use the previous one
// twice is refused (E055) with a hint that names lets as the cause (not
// one that recommends more lets), and the lets the aborted lowering never
// reached are not called unused (W004).
func TestTooLargeLetChain(t *testing.T) {
	var b strings.Builder
	b.WriteString("mask m(b, h, q, kv) {\n    let x0 = q - kv\n")
	for i := 1; i < 20; i++ {
		fmt.Fprintf(&b, "    let x%d = x%d + x%d\n", i, i-1, i-1)
	}
	b.WriteString("    x19 >= 0\n}\nattention a {\n    mask = m\n}\n")
	_, diags := checkSource(t, b.String(), nil)
	var tooLarge int
	for _, d := range diags {
		switch d.Code {
		case CodeTooLarge:
			tooLarge++
			if strings.Contains(d.Hint, "bind a repeated subexpression with let") || !strings.Contains(d.Hint, "lets are inlined at every use") {
				t.Errorf("E055 hint: %q", d.Hint)
			}
		case CodeUnusedLet:
			t.Errorf("used let called unused: %s", d.Error())
		}
	}
	if tooLarge == 0 {
		t.Fatalf("no E055:\n%s", diags.Render())
	}
}
