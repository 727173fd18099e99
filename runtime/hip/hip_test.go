package hip

import (
	"errors"
	"strings"
	"testing"

	"github.com/maskc/maskc/runtime/backend"
	"github.com/maskc/maskc/runtime/internal/dl"
)

// TestNoTensorMapEncoder: HIP has no tensor maps, so the backend offers no
// encoder and launchers pass the maps zero.
func TestNoTensorMapEncoder(t *testing.T) {
	if _, ok := any((*Backend)(nil)).(backend.TensorMapEncoder); ok {
		t.Error("the HIP backend claims to encode tensor maps")
	}
}

func TestArchFromProperties(t *testing.T) {
	props := func(parts ...string) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	tests := []struct {
		name  string
		props []byte
		want  string
	}{
		{"plain", props("AMD Instinct MI300X\x00\x00\x01\x02", "gfx942\x00", "\x00\x00"), "gfx942"},
		{"features", props("\x07\x00gfx90a:sramecc+:xnack-\x00"), "gfx90a"},
		{"glued to a previous field", props("\x05\x06gfx950\x00"), "gfx950"},
		{"gfx inside another word first", props("my gfxcard\x00gfx1100\x00"), "gfx1100"},
		{"none", props("AMD Radeon\x00\x00"), ""},
		{"unterminated", props("gfx942"), "gfx942"},
	}
	for _, tc := range tests {
		if got := archFromProperties(tc.props); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestOpenErrorsAreClear checks that a machine without a HIP GPU gets an
// error naming what was searched (no library) or what failed (library but
// no device) rather than a crash. On a machine with a HIP GPU it checks the
// device instead.
func TestOpenErrorsAreClear(t *testing.T) {
	b, err := Open(0)
	if err == nil {
		defer b.Close()
		if info := b.Device(); info.Backend != "hip" || !strings.HasPrefix(info.Arch, "gfx") || info.MultiProcessors <= 0 {
			t.Fatalf("opened a device with info %+v", info)
		}
		return
	}
	var nf *dl.NotFoundError
	var he *Error
	switch {
	case errors.As(err, &nf):
		if !strings.Contains(err.Error(), runtimeNames[0]) {
			t.Errorf("search error does not list %s: %v", runtimeNames[0], err)
		}
	case errors.As(err, &he):
		if !strings.Contains(err.Error(), "no usable device") {
			t.Errorf("device error does not say what failed: %v", err)
		}
	default:
		t.Errorf("unexpected error type %T: %v", err, err)
	}
	if _, err := Open(-1); err == nil {
		t.Error("Open(-1) succeeded")
	}
}
