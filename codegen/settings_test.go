package codegen

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/eval"
	"github.com/maskc/maskc/parser"
)

// TestSettingsMaskMatchesContract checks the mask synthesised from
// trainer-style causal/window settings against the contract's statement of
// the kernels' semantics, for every (q, kv) of small unequal lengths.
func TestSettingsMaskMatchesContract(t *testing.T) {
	cases := []struct {
		settings    string
		left, right int64 // -1: unbounded
	}{
		{"causal = true", -1, 0},
		{"causal = true\n    window = (3, 0)", 3, 0},
		{"window = (2, 1)", 2, 1},
		{"window = (-1, 2)", -1, 2},
		{"window = (0, 0)", 0, 0},
	}
	for _, tc := range cases {
		src := fmt.Sprintf("attention a {\n    %s\n}\n", tc.settings)
		f, pd := parser.ParseFile("s.flex", []byte(src))
		require.False(t, pd.HasErrors(), pd.Render())
		p, cd := check.Check(f, check.Options{})
		require.False(t, cd.HasErrors(), cd.Render())
		l := settingsMask(p.Attentions[0])
		require.NotNil(t, l, tc.settings)
		fn, err := eval.Compile(l)
		require.NoError(t, err)
		for sq := int64(1); sq <= 9; sq++ {
			for skv := int64(1); skv <= 9; skv++ {
				env := &eval.Env{B: 1, H: 1, HKV: 1, Q: sq, KV: skv}
				for i := int64(0); i < sq; i++ {
					for j := int64(0); j < skv; j++ {
						off := i + skv - sq
						want := (tc.left < 0 || j >= off-tc.left) && (tc.right < 0 || j <= off+tc.right)
						got, err := fn.Mask(env, 0, 0, i, j)
						require.NoError(t, err)
						require.Equal(t, want, got, "%s: Sq=%d Skv=%d i=%d j=%d", tc.settings, sq, skv, i, j)
					}
				}
			}
		}
	}
}

// TestSettingsScoreMatchesContract checks the ALiBi score synthesised from
// an `alibi = slopes` setting: -slope * |i + Skv - Sq - j|.
func TestSettingsScoreMatchesContract(t *testing.T) {
	src := "buffer slopes: f32[H]\nattention a {\n    causal = true\n    alibi = slopes\n}\n"
	f, pd := parser.ParseFile("s.flex", []byte(src))
	require.False(t, pd.HasErrors(), pd.Render())
	p, cd := check.Check(f, check.Options{})
	require.False(t, cd.HasErrors(), cd.Render())
	l := settingsScore(p.Attentions[0])
	fn, err := eval.Compile(l)
	require.NoError(t, err)
	slopes := &eval.Tensor{Dims: []int{2}, Data: []float64{0.5, 0.25}}
	env := &eval.Env{B: 1, H: 2, HKV: 2, Q: 3, KV: 5, Buffers: map[string]*eval.Tensor{"slopes": slopes}}
	for h := int64(0); h < 2; h++ {
		for i := int64(0); i < 3; i++ {
			for j := int64(0); j < 5; j++ {
				d := i + 5 - 3 - j
				if d < 0 {
					d = -d
				}
				got, err := fn.Score(env, 1.5, 0, h, i, j)
				require.NoError(t, err)
				require.Equal(t, 1.5-slopes.Data[h]*float64(d), got)
			}
		}
	}
}
