package classify

import (
	"strings"
	"testing"
)

// TestWindowBeyondInt32IsGenerated: a mask whose window does not fit
// Turbo's 32-bit window_size is generated, with the reason, not passed to
// Turbo (where it would overflow); windows up to int32 still map.
func TestWindowBeyondInt32IsGenerated(t *testing.T) {
	for _, tc := range []struct {
		window, pattern, reason string
	}{
		{"2147483647", PatternSWCausal, "keeps 2147483648 keys"},
		{"2147483648", PatternGenerated, "window_size=(2147483648, 0) does not fit the 32-bit int"},
		{"9223372036854775807", PatternGenerated, "window_size=(9223372036854775807, 0) does not fit the 32-bit int"},
	} {
		src := "attention a {\n    mask = sliding_window(" + tc.window + ")\n}\n"
		_, plan, diags := compileSrc(t, "w.flex", src, nil)
		if diags.HasErrors() || plan == nil {
			t.Fatalf("%s: %s", tc.window, diags.Render())
		}
		d := plan.Attentions[0]
		if d.Pattern != tc.pattern || !strings.Contains(d.Reason, tc.reason) || strings.Contains(d.Reason, "-9223372036854775808") {
			t.Errorf("window %s: pattern %s, reason %q; want %s, %q", tc.window, d.Pattern, d.Reason, tc.pattern, tc.reason)
		}
	}
}
