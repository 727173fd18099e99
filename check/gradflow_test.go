package check

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestNoGradientWarnings pins which scores get W010 and where.
func TestNoGradientWarnings(t *testing.T) {
	for _, tc := range []struct {
		score string
		want  []string // the source text each warning points at
	}{
		{"score + t[h]", nil},
		{"floor(score) + score", []string{"floor(score)"}},
		{"ceil(t[h]) * score", []string{"ceil(t[h])"}},
		{"score // 2.0", []string{"score // 2.0"}},
		{"score + (score > 0)", []string{"score > 0"}},
		{"where(t[h] > 0, 1.0, 0.0) + (t[h] > 1) * score", []string{"t[h] > 1"}},
		{"score + (q > kv)", nil},                           // no dependence on the score or a buffer
		{"where(floor(score) > 1, score, 0.0)", nil},        // only a condition: nothing to learn there
		{"score if score > 0 else -score", nil},             //
		{"floor(q / 2) + score", nil},                       // floor of an index expression
		{"score + doc[kv]", nil},                            // an int buffer has no gradient
		{"clamp(score, -1.0, 1.0) + abs(score % 3.0)", nil}, // kinks are not blocks
		{"-(score < 0) + min(score, 0.0)", []string{"score < 0"}},
	} {
		src := "buffer t: f32[H]\nbuffer doc: i32[KV]\nscore s(score, b, h, q, kv) = " + tc.score + "\nattention a {\n    score = s\n}\n"
		p, diags := checkSource(t, src, nil)
		assert.False(t, diags.HasErrors(), diags.Render())
		var got []string
		for _, d := range diags {
			if d.Code == CodeNoGradient {
				got = append(got, p.File.Source.Slice(d.Span))
				assert.NotEmpty(t, d.Hint)
			}
		}
		assert.Equal(t, tc.want, got, tc.score)
	}
}
