package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSliceEnvMaskBuffers: the tile maps' environment (classify --shape,
// draw) holds the buffers the mask reads and not a score's, which no tile
// map reads (an additive [B, 1, Q, KV] bias at S = 8192 was 67M values
// drawn and encoded for nothing), unless --buffer gives one.
func TestSliceEnvMaskBuffers(t *testing.T) {
	src := `buffer doc: i32[KV] segments
buffer bias: f32[B, 1, Q, KV]

mask same_doc(b, h, q, kv) = doc[q] == doc[kv] and q >= kv
score biased(s, b, h, q, kv) = s + bias[b, 0, q, kv]

attention a {
    mask = same_doc
    score = biased
}

attention scored {
    score = biased
}
`
	path := filepath.Join(t.TempDir(), "m.flex")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}
	u, cu, rc := buildPlan(e, path, "", nil)
	if rc != exitOK {
		t.Fatalf("does not check (exit %d)", rc)
	}
	for _, tc := range []struct {
		attention string
		given     bufferFlags
		want      []string
	}{
		{"a", nil, []string{"doc"}},
		{"scored", nil, nil},
		{"a", bufferFlags{"bias": make([]float64, 2*1*40*40)}, []string{"bias", "doc"}},
	} {
		k, kd := cu.Kernel(tc.attention)
		if kd.HasErrors() {
			t.Fatal(kd.Render())
		}
		cfg := runConfig{path: path, b: 2, h: 2, hkv: 2, sq: 40, skv: 40, buffers: tc.given}
		ev, err := sliceEnv(e, &cfg, u.prog, k, 7)
		if err != nil {
			t.Fatalf("%s: %v", tc.attention, err)
		}
		var got []string
		for _, name := range []string{"bias", "doc"} {
			if ev.Buffers[name] != nil {
				got = append(got, name)
			}
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s (--buffer %v): buffers %v, want %v", tc.attention, len(tc.given) > 0, got, tc.want)
		}
	}
}
