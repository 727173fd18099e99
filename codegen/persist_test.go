package codegen

import (
	"strings"
	"testing"

	"github.com/maskc/maskc/hipsrc"
)

// TestFwdPersistent: Options.FwdPersistent makes the warp-specialized
// forward persistent where it does not walk its key tiles: the source asks
// for it (hipsrc.WSPersistDefine) and the sm_90a launch takes
// hipsrc.WSPersistQTiles q tiles per block, no other platform's; without
// the option, and on a walk (a block selection) or a kernel on attn_fwd.h,
// neither.
func TestFwdPersistent(t *testing.T) {
	sm90 := hipsrc.NVIDIAWGMMA.String()
	for _, tc := range []struct {
		file, attention string
		persistent      bool
		want            bool
	}{
		{"../examples/full.flex", "", true, true},
		{"../examples/causal.flex", "", true, true},
		{"../examples/full.flex", "", false, false},
		{"../testdata/tilemasks/moba.flex", "moba", true, false},
		{"../examples/document_causal.flex", "packed_layer", true, false},
	} {
		k := generateAttention(t, tc.file, tc.attention, Options{FwdPersistent: tc.persistent})
		if walk := strings.Contains(tc.file, "moba"); k.WSWalk != walk || k.WarpSpecialized != !strings.Contains(tc.file, "document") {
			t.Fatalf("%s: warp-specialized %v, walk %v: not the case it is here for", tc.file, k.WarpSpecialized, k.WSWalk)
		}
		if k.WSPersist != tc.want {
			t.Errorf("%s (option %v): WSPersist %v, want %v", tc.file, tc.persistent, k.WSPersist, tc.want)
		}
		if got := strings.Contains(k.Source, hipsrc.WSPersistDefine); got != tc.want {
			t.Errorf("%s (option %v): source asks for the persistent forward: %v", tc.file, tc.persistent, got)
		}
		for p, c := range k.Launch {
			want := 0
			if tc.want && p == sm90 {
				want = hipsrc.WSPersistQTiles
			}
			if c.QTilesPerBlock != want {
				t.Errorf("%s (option %v): %s launch takes %d q tiles per block, want %d", tc.file, tc.persistent, p, c.QTilesPerBlock, want)
			}
		}
	}
}
