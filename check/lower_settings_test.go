package check_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/dsl"
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
		a := p.Attentions[0]
		require.Equal(t, check.OriginSettings, a.MaskOrigin)
		l := a.Mask
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
	a := p.Attentions[0]
	require.Equal(t, check.OriginAlibi, a.ScoreOrigin)
	l := a.Score
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

// TestSettingsResolve pins where each block's mask and score come from
// and the defaults check resolves (head_dim, dtype, layout, scale).
func TestSettingsResolve(t *testing.T) {
	src := `buffer slopes: f32[H]
mask m(b, h, q, kv) = q >= kv
attention plain {
}
attention swa {
    causal = true
    window = (7, 0)
    alibi = slopes
    head_dim = 64
}
attention modded {
    mask = m
    scale = 0.5
    dtype = fp16
    layout = bhsd
}
`
	f, pd := parser.ParseFile("s.flex", []byte(src))
	require.False(t, pd.HasErrors(), pd.Render())
	p, cd := check.Check(f, check.Options{})
	require.False(t, cd.HasErrors(), cd.Render())
	tests := []struct {
		name          string
		mask, score   check.Origin
		headDim       int
		dtype, layout string
		scale         float64
	}{
		{"plain", check.OriginNone, check.OriginNone, 128, "bf16", "bshd", 1 / math.Sqrt(128)},
		{"swa", check.OriginSettings, check.OriginAlibi, 64, "bf16", "bshd", 0.125},
		{"modded", check.OriginMod, check.OriginNone, 128, "fp16", "bhsd", 0.5},
	}
	for _, tt := range tests {
		a := p.Attention(tt.name)
		require.Equal(t, tt.mask, a.MaskOrigin, tt.name)
		require.Equal(t, tt.score, a.ScoreOrigin, tt.name)
		require.Equal(t, tt.mask == check.OriginNone, a.Mask == nil, tt.name)
		require.Equal(t, tt.headDim, a.ResolvedHeadDim(), tt.name)
		require.Equal(t, tt.dtype, a.ResolvedDType(), tt.name)
		require.Equal(t, tt.layout, a.ResolvedLayout(), tt.name)
		require.InDelta(t, tt.scale, a.ScaleFor(a.ResolvedHeadDim()), 1e-15, tt.name)
	}
	require.Equal(t, 1/math.Sqrt(64), dsl.DefaultScale(64))
}

// TestConflicts: a trainer-style setting next to the mod that defines the
// same quantity is listed once, for the classifier and the generator.
func TestConflicts(t *testing.T) {
	src := `buffer slopes: f32[H]
mask m(b, h, q, kv) = q >= kv
score s(score, b, h, q, kv) = score * 2.0
attention settings_only {
    causal = true
    window = (7, 0)
    alibi = slopes
}
attention all_three {
    mask = m
    score = s
    causal = true
    window = (7, 0)
    alibi = slopes
}
attention mask_window {
    mask = m
    window = (3, 0)
    causal = false
}
attention score_alibi {
    score = s
    causal = true
    alibi = slopes
}
`
	f, pd := parser.ParseFile("c.flex", []byte(src))
	require.False(t, pd.HasErrors(), pd.Render())
	p, cd := check.Check(f, check.Options{})
	require.False(t, cd.HasErrors(), cd.Render())
	tests := []struct {
		name string
		want []check.SettingConflict
	}{
		{"settings_only", nil},
		{"all_three", []check.SettingConflict{{Key: "window", Mod: "mask"}, {Key: "causal", Mod: "mask"}, {Key: "alibi", Mod: "score"}}},
		{"mask_window", []check.SettingConflict{{Key: "window", Mod: "mask"}}},
		{"score_alibi", []check.SettingConflict{{Key: "alibi", Mod: "score"}}},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, p.Attention(tt.name).Conflicts(), tt.name)
	}
}
