package check

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/format"
)

// TestPortingLowers pins what each torch spelling lowers to: a def score
// whose body is the expression, lowered and printed.
func TestPortingLowers(t *testing.T) {
	tests := []struct{ expr, want string }{
		{"(q_idx - kv_idx).abs()", "score + abs(q - kv)"},
		{"torch.abs(q_idx - kv_idx)", "score + abs(q - kv)"},
		{"(q_idx - kv_idx).clamp(0, 15)", "score + min(max(q - kv, 0), 15)"},
		{"(q_idx - kv_idx).clamp(min=0)", "score + max(q - kv, 0)"},
		{"(q_idx - kv_idx).clamp(max=4)", "score + min(q - kv, 4)"},
		{"torch.clamp(q_idx, min=1, max=9)", "score + min(max(q, 1), 9)"},
		{"q_idx.clamp_min(3) + kv_idx.clamp_max(5)", "score + max(q, 3) + min(kv, 5)"},
		{"q_idx.float()", "score + float(q)"},
		{"(score * 2.0).long()", "score + int(score * 2.0)"},
		{"(score * 2.0).int()", "score + int(score * 2.0)"},
		{"score.to(torch.int64) + score.to(torch.int32)", "score + int(score) + int(score)"},
		{"q_idx.to(torch.float32)", "score + float(q)"},
		{"q_idx.long()", "score + q"},
		{"int(3.9) + int(-3.9)", "score + 3 + -3"},
		{"float(q_idx)", "score + float(q)"},
		{"torch.where(q_idx >= kv_idx, 0.0, float(\"-inf\"))", "score + where(q >= kv, 0.0, -inf)"},
		{"(-math.inf if q_idx < 0 else 1.0)", "score + (-inf if q < 0 else 1.0)"},
		{"float(\"1e3\") + math.pi", "score + 1000.0 + 3.141592653589793"},
		{"float(r\"1e3\") + float(f'2')", "score + 1000.0 + 2.0"},
		{"torch.remainder(q_idx, 7)", "score + q % 7"},
		{"torch.floor_divide(q_idx, 7)", "score + q // 7"},
		{"torch.fmod(q_idx, 7)", "score + where(q % 7 != 0 and (q < 0) != False, q % 7 - 7, q % 7)"},
		{"torch.div(q_idx, 7)", "score + q / 7"},
		{"torch.div(q_idx, 7, rounding_mode=\"floor\")", "score + q // 7"},
		{"torch.div(q_idx, 7, rounding_mode=None)", "score + q / 7"},
		{"torch.minimum(q_idx, kv_idx) + torch.maximum(q_idx, kv_idx)", "score + min(q, kv) + max(q, kv)"},
		{"q_idx.minimum(kv_idx)", "score + min(q, kv)"},
		{"torch.logical_and(q_idx > 1, kv_idx).float()", "score + float(q > 1 and kv != 0)"},
		{"torch.logical_or(q_idx, kv_idx).float()", "score + float(q != 0 or kv != 0)"},
		{"torch.logical_xor(q_idx > 1, kv_idx > 2).float()", "score + float((q > 1) != (kv > 2))"},
		{"torch.logical_not(q_idx).float()", "score + float(not q != 0)"},
		{"(q_idx > 1).logical_and(kv_idx > 2).float()", "score + float(q > 1 and kv > 2)"},
		{"torch.bitwise_and(q_idx, 7) + torch.bitwise_or(q_idx, kv_idx) + torch.bitwise_xor(q_idx, 3)", "score + (q & 7) + (q | kv) + (q ^ 3)"},
		{"torch.bitwise_left_shift(q_idx, 2) + torch.bitwise_right_shift(kv_idx, 1)", "score + (q << 2) + (kv >> 1)"},
		{"torch.bitwise_not(q_idx) + kv_idx.bitwise_and(q_idx).bitwise_left_shift(1)", "score + ~q + ((kv & q) << 1)"},
		{"torch.bitwise_xor(q_idx > 1, kv_idx > 2).float()", "score + float((q > 1) ^ (kv > 2))"},
		{"q_idx.bool().float()", "score + float(q != 0)"},
		{"q_idx.to(torch.bool).float()", "score + float(q != 0)"},
		{"q_idx.ge(kv_idx).float() + q_idx.ne(1).float()", "score + float(q >= kv) + float(q != 1)"},
		{"(score / 30.0).tanh() * 30.0", "score + tanh(score / 30.0) * 30.0"},
		{"math.floor(7 / 2) + math.ceil(7 / 2)", "score + 3 + 4"},
		{"math.floor(score)", "score + floor(score)"},
		{"torch.ones_like(q_idx) + torch.full_like(score, 2) + torch.zeros_like(q_idx > 0)", "score + 1 + 2.0 + False"},
		{"q_idx.new_ones((), dtype=torch.bool) + q_idx.new_zeros(()) + score.new_full((), 3)", "score + True + 0 + 3.0"},
		{"q_idx.new_full((), 2.5, dtype=torch.float32) + q_idx.new_ones(())", "score + 2.5 + 1"},
		{"(q_idx - kv_idx).to(score.device) + score.to(device=q_idx.device)", "score + (q - kv) + score"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) { checkScoreLowers(t, "", tt.expr, tt.want) })
	}
}

// checkScoreLowers checks a def score returning `score + expr` after the
// declarations decls and compares its lowered, printed form with want.
func checkScoreLowers(t *testing.T, decls, expr, want string) {
	t.Helper()
	src := decls + "def s(score, b, h, q_idx, kv_idx):\n    return score + " + expr + "\n"
	p, diags := checkSource(t, src, nil)
	require.False(t, diags.HasErrors(), diags.Render())
	low, diags := p.LowerMod("s")
	require.False(t, diags.HasErrors(), diags.Render())
	assert.Equal(t, want, format.Expr(low.Expr))
	assert.Empty(t, loweredInvariants(p, low))
}

// TestPortingTruncDiv checks torch.div(..., rounding_mode="trunc") against
// truncation toward zero over every sign combination, ints and floats.
func TestPortingTruncDiv(t *testing.T) {
	src := "def s(score, b, h, q_idx, kv_idx):\n    return score + torch.div(q_idx - 7, kv_idx - 3, rounding_mode=\"trunc\").float()\n" +
		"def f(score, b, h, q_idx, kv_idx):\n    return torch.div(score, kv_idx - 3.0, rounding_mode=\"trunc\")\n"
	eachSignPair(t, src, []string{"s", "f"}, func(name string, low *dsl.Lowered, q, kv int64) {
		score := float64(q) - 6.5
		got := evalLowered(t, low, score, q, kv)
		var want float64
		if name == "s" {
			want = score + float64((q-7)/(kv-3)) // Go's / truncates toward zero
		} else {
			want = math.Trunc(score / float64(kv-3))
		}
		assert.Equal(t, want, got, "%s at q=%d kv=%d", name, q, kv)
	})
}

// TestPortingFmod checks torch.fmod and .fmod() of ints against the
// remainder truncated toward zero (Go's %, C's fmod: the sign of the
// dividend) over every sign combination, where Python's % differs.
func TestPortingFmod(t *testing.T) {
	src := "def s(score, b, h, q_idx, kv_idx):\n    return score + torch.fmod(q_idx - 7, kv_idx - 3).float()\n" +
		"def m(score, b, h, q_idx, kv_idx):\n    return score + (q_idx - 7).fmod(kv_idx - 3).float()\n"
	eachSignPair(t, src, []string{"s", "m"}, func(name string, low *dsl.Lowered, q, kv int64) {
		want := float64((q - 7) % (kv - 3)) // Go's % truncates toward zero
		assert.Equal(t, want, evalLowered(t, low, 0, q, kv), "%s at q=%d kv=%d", name, q, kv)
	})
}

// eachSignPair checks src, lowers each of its score mods names and calls
// check at every q in [0, 15) and kv in [0, 7) but kv = 3: q - 7 and kv - 3
// then take every sign combination, the divisor never zero.
func eachSignPair(t *testing.T, src string, names []string, check func(name string, low *dsl.Lowered, q, kv int64)) {
	t.Helper()
	p, diags := checkSource(t, src, nil)
	require.False(t, diags.HasErrors(), diags.Render())
	for _, name := range names {
		low, diags := p.LowerMod(name)
		require.False(t, diags.HasErrors(), diags.Render())
		for q := int64(0); q < 15; q++ {
			for kv := int64(0); kv < 7; kv++ {
				if kv != 3 {
					check(name, low, q, kv)
				}
			}
		}
	}
}

// TestPortingFmodFloatRefused pins that torch.fmod of a float is refused
// where it is written: maskc's % is Python's, and correcting it by y rounds.
func TestPortingFmodFloatRefused(t *testing.T) {
	src := "def s(score, b, h, q_idx, kv_idx):\n    return torch.fmod(score, 3)\n"
	_, diags := checkSource(t, src, nil)
	require.True(t, diags.HasErrors())
	assert.Contains(t, diags.Render(), "2:23: error[E056]: torch.fmod of a float")
}

// TestPortingTupleHelperUses: every element of a helper's returned tuple
// counts as a use of its names, also when the helper's declaration is
// checked alone (its parameter unknown there): no W004 on the second
// element's local, in either order.
func TestPortingTupleHelperUses(t *testing.T) {
	for _, ret := range []string{"x, y", "y, x", "(x, y)"} {
		src := "def dec(z):\n    x = z // 64\n    y = z % 64\n    return " + ret + "\n\n" +
			"def m(b, h, q_idx, kv_idx):\n    qx, qy = dec(q_idx)\n    kx, ky = dec(kv_idx)\n    return ((qx - kx).abs() <= 3) & ((qy - ky).abs() <= 3)\n"
		_, diags := checkSource(t, src, nil)
		assert.Empty(t, diags, "return %s: %s", ret, diags.Render())
	}
}

// TestPortingThrowawayNames: W004 leaves out what Python code leaves unused
// on purpose, an unpacking's other targets and names starting with `_`,
// and still reports a plain unused assignment.
func TestPortingThrowawayNames(t *testing.T) {
	helper := "def dec(z):\n    return z // 64, z % 64\n\n"
	for _, body := range []string{
		"    q_col, q_row = dec(q_idx)\n    return q_row >= kv_idx\n",
		"    _, q_row = dec(q_idx)\n    return q_row >= kv_idx\n",
		"    _unused = q_idx * 2\n    return q_idx >= kv_idx\n",
	} {
		_, diags := checkSource(t, helper+"def m(b, h, q_idx, kv_idx):\n"+body, nil)
		assert.Empty(t, diags, "%s: %s", body, diags.Render())
	}
	_, diags := checkSource(t, helper+"def m(b, h, q_idx, kv_idx):\n    unused = q_idx * 2\n    return q_idx >= kv_idx\n", nil)
	assert.Contains(t, diags.Render(), "warning[W004]: assignment to unused is never used")
}

// evalLowered evaluates a lowered score with dsl's Python operations, at
// score and (b, h) = (0, 0).
func evalLowered(t *testing.T, low *dsl.Lowered, score float64, q, kv int64) float64 {
	t.Helper()
	var ev func(e dsl.Expr) dsl.Value
	ev = func(e dsl.Expr) dsl.Value {
		switch x := e.(type) {
		case *dsl.IntLit:
			return dsl.Int(x.Value)
		case *dsl.FloatLit:
			return dsl.Float(x.Value)
		case *dsl.BoolLit:
			return dsl.Bool(x.Value)
		case *dsl.VarRef:
			switch x.Var {
			case dsl.VarQ:
				return dsl.Int(q)
			case dsl.VarKV:
				return dsl.Int(kv)
			case dsl.VarScore:
				return dsl.Float(score)
			}
			return dsl.Int(0)
		case *dsl.UnaryExpr:
			v, err := dsl.UnaryOp(x.Op, ev(x.X))
			require.NoError(t, err)
			return v
		case *dsl.BinaryExpr:
			v, err := dsl.BinaryOp(x.Op, ev(x.X), ev(x.Y))
			require.NoError(t, err)
			return v
		case *dsl.CompareExpr:
			v, err := dsl.CompareOp(x.Ops[0], ev(x.Operands[0]), ev(x.Operands[1]))
			require.NoError(t, err)
			return dsl.Bool(v)
		case *dsl.CondExpr:
			if ev(x.Cond).Truth() {
				return ev(x.Then)
			}
			return ev(x.Else)
		case *dsl.CallExpr:
			args := make([]dsl.Value, len(x.Args))
			for i, a := range x.Args {
				args[i] = ev(a)
			}
			v, err := dsl.CallBuiltin(x.Fun.(*dsl.Ident).Name, args)
			require.NoError(t, err)
			return v
		}
		t.Fatalf("unexpected %T", e)
		return dsl.Value{}
	}
	return ev(low.Expr).AsFloat()
}

// TestPortingDiagnostics pins the messages of the porting mistakes, each
// positioned in the pasted text.
func TestPortingDiagnostics(t *testing.T) {
	tests := []struct{ body, want string }{
		{"return score + q_idx.absolute()", "4:26: error[E074]: tensor method .absolute is not supported"},
		{"return score + q_idx.abs", "4:20: error[E074]: method .abs is used without calling it"},
		{"return score + q_idx.abs(1)", "4:20: error[E023]: .abs takes 0 arguments, got 1"},
		{"return score + q_idx.clamp(min=0, max=9, lo=1)", "4:46: error[E075]: .clamp takes no keyword argument lo="},
		{"return score + q_idx.clamp(0, min=1)", "4:35: error[E075]: .clamp gets min both by position and as min="},
		{"return score + q_idx.clamp()", "4:20: error[E023]: .clamp takes a value and at least one bound"},
		{"return score + torch.div(q_idx, 2, rounding_mode=\"up\")", "4:54: error[E075]: rounding_mode must be \"floor\", \"trunc\" or None, got \"up\""},
		{"return score + torch.minimum(q_idx, 2, key=3)", "4:44: error[E075]: torch.minimum takes no keyword argument key="},
		{"return score + q_idx.to(torch.float16)", "4:29: error[E076]: .to(torch.float16) is not a conversion maskc makes exactly"},
		{"return score + float(\"lots\")", "4:26: error[E076]: float(\"lots\") is not a number"},
		{"return score + \"x\"", "4:20: error[E073]: a string is not a value"},
		{"return score + abs(q_idx, base=2)", "4:31: error[E075]: abs takes no keyword argument base="},
		{"return torch.logical_and(q_idx, score > 0)", "4:12: error[E025]: score s must give a number, got bool"},
		{"return score + q_idx.new_ones((2, 2))", "4:35: error[E028]: .new_ones((2, 2)) makes a tensor of that shape; a mod computes one value per (q, kv) pair"},
		{"return score + q_idx.new_ones(())[0]", "4:20: error[E032]"},
		{"return score + q_idx.new_zeros((), dtype=torch.float16)", "4:46: error[E076]: dtype=torch.float16 is not a dtype maskc makes exactly"}, {"return score + ()", "4:20: error[E028]: () is a tuple, not a value"},
		{"return score + q_idx.new_full((), kv_idx)", "4:39: error[E076]: the fill value of .new_full must be a constant, got a run-time int"},
		{"return score + q_idx.new_ones((), device=q_idx.device)", "4:39: error[E075]: .new_ones takes no keyword argument device= here"},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			src := "# pasted\n\ndef s(score, b, h, q_idx, kv_idx):\n    " + tt.body + "\n"
			_, diags := checkSource(t, src, nil)
			require.True(t, diags.HasErrors())
			first := diags[0].Render()
			assert.Contains(t, first, tt.want)
		})
	}
}

// TestPortingHuggingFaceT5 pastes the body of Hugging Face's
// _relative_position_bucket (bidirectional branch, comments, augmented
// assignments, torch.min with torch.full_like, a multi-line parenthesised
// expression) and checks that it computes the same bucket as the corpus's
// t5_buckets.flex form at every distance up to 600.
func TestPortingHuggingFaceT5(t *testing.T) {
	src := `def hf_bucket(score, b, h, q_idx, kv_idx):
    relative_position = kv_idx - q_idx
    num_buckets = 32
    max_distance = 128
    relative_buckets = 0
    num_buckets //= 2
    relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
    relative_position = torch.abs(relative_position)
    # now relative_position is in the range [0, inf)

    # half of the buckets are for exact increments in positions
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact

    # The other half of the buckets are for logarithmically bigger bins in positions up to max_distance
    relative_position_if_large = max_exact + (
        torch.log(relative_position.float() / max_exact)
        / math.log(max_distance / max_exact)
        * (num_buckets - max_exact)
    ).to(torch.long)
    relative_position_if_large = torch.min(
        relative_position_if_large, torch.full_like(relative_position_if_large, num_buckets - 1)
    )

    relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
    return score + relative_buckets.float()

def generate_t5_bucket(num_buckets: int, max_distance: int):
    def t5_bucket(score, b, h, q_idx, kv_idx):
        relative_position = kv_idx - q_idx
        num_buckets_half = num_buckets // 2
        relative_buckets = (relative_position > 0).to(torch.long) * num_buckets_half
        relative_position = torch.abs(relative_position)
        max_exact = num_buckets_half // 2
        is_small = relative_position < max_exact
        relative_position_if_large = max_exact + (torch.log(relative_position.float() / max_exact) / math.log(max_distance / max_exact) * (num_buckets_half - max_exact)).to(torch.long)
        relative_position_if_large = relative_position_if_large.clamp(max=num_buckets_half - 1)
        relative_buckets = relative_buckets + torch.where(is_small, relative_position, relative_position_if_large)
        return score + relative_buckets.float()
    return t5_bucket

attention hf {
    score = hf_bucket
}

attention corpus {
    score = generate_t5_bucket(32, 128)
}
`
	p, diags := checkSource(t, src, nil)
	require.False(t, diags.HasErrors(), diags.Render())
	require.Empty(t, diags, diags.Render())
	hf, corpus := p.Attention("hf").Score, p.Attention("corpus").Score
	seen := map[float64]bool{}
	for q := int64(0); q < 600; q += 7 {
		for kv := int64(0); kv < 600; kv += 3 {
			want := evalLowered(t, corpus, 0, q, kv)
			require.Equal(t, want, evalLowered(t, hf, 0, q, kv), "q=%d kv=%d", q, kv)
			seen[want] = true
		}
	}
	assert.Len(t, seen, 31, "every bucket is reached but 16 (a positive distance of 0)")
}

// TestPortingWarnings pins W030: Python in a def that torch would not run
// on tensors, while the torch spellings and constants pass silently.
func TestPortingWarnings(t *testing.T) {
	tests := []struct{ body, want string }{
		{"return (q_idx >= kv_idx) and (kv_idx > 0)", "4:30: warning[W030]: `and` needs the truth value of a tensor"},
		{"return not (q_idx >= kv_idx)", "4:12: warning[W030]: `not` needs the truth value of a tensor"},
		{"return 0 <= q_idx - kv_idx <= 8", "4:12: warning[W030]: a chained comparison needs the truth value of a tensor"},
		{"return (q_idx >= kv_idx) if h > 0 else (kv_idx >= q_idx)", "4:12: warning[W030]: `x if c else y` needs the truth value of a tensor"},
		{"return min(q_idx, 40) >= kv_idx", "4:12: warning[W030]: Python's min() on tensors needs the truth value of a tensor"},
		{"return int(q_idx * 0.5) >= kv_idx", "4:12: warning[W030]: Python's int() of a tensor needs a tensor of one element"},
		{"return where(q_idx >= kv_idx, True, False)", "4:12: warning[W030]: where is not a Python built-in: under torch this def raises NameError"},
		{"return (q_idx >= kv_idx) & (kv_idx > 0)", ""},
		{"return torch.where(q_idx >= kv_idx, True, False) | (min(3, 4) > int(2.5))", ""},
		{"return abs(q_idx - kv_idx) <= 8 if True and not False else q_idx >= kv_idx", ""},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			src := "# pasted\n\ndef m(b, h, q_idx, kv_idx):\n    " + tt.body + "\n"
			_, diags := checkSource(t, src, nil)
			require.False(t, diags.HasErrors(), diags.Render())
			if tt.want == "" {
				assert.Empty(t, diags, diags.Render())
				return
			}
			require.NotEmpty(t, diags)
			assert.Contains(t, diags[0].Render(), tt.want)
		})
	}
}

// TestPortingBufferShape pins what a captured tensor's shape lowers to: its
// declared extents, as constants or int expressions of the sizes.
func TestPortingBufferShape(t *testing.T) {
	decls := "buffer bias: f32[H, 2 * KV - 1]\nbuffer sel: i32[H, 64, 4]\n"
	tests := []struct{ expr, want string }{
		{"bias.shape[-1]", "score + (2 * KV + -1)"},
		{"bias.shape[0] + sel.shape[1]", "score + H + 64"},
		{"bias.size(1)", "score + (2 * KV + -1)"},
		{"bias.size()[0]", "score + H"},
		{"sel.size(-1) + sel.ndim + sel.dim()", "score + 4 + 3 + 3"},
		{"sel.numel()", "score + H * 64 * 4"},
		{"bias.numel()", "score + H * (2 * KV + -1)"},
		{"bias[h, (q_idx - kv_idx).clamp(min=0, max=bias.shape[1] - 1)]", "score + bias[h, min(max(q - kv, 0), 2 * KV + -1 - 1)]"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) { checkScoreLowers(t, decls, tt.expr, tt.want) })
	}
}

// TestPortingBufferShapeDiagnostics pins the mistakes around a buffer's
// shape, each positioned.
func TestPortingBufferShapeDiagnostics(t *testing.T) {
	tests := []struct{ body, want string }{
		{"return score + bias.shape[2]", "5:31: error[E030]: tuple index 2 out of range for a tuple of 2"},
		{"return score + bias.shape[q_idx]", "5:31: error[E031]: a tuple index must be a constant int, got q_idx"},
		{"return score + bias.dtype", "5:25: error[E074]: buffer bias has no attribute .dtype"},
		{"return score + bias.shape()", "5:25: error[E074]: buffer bias has no method .shape"},
		{"return score + bias.abs()", "5:25: error[E074]: buffer bias has no method .abs"},
		{"return score + bias.numel", "5:20: error[E074]: method .numel is used without calling it"},
		{"return score + bias.size(0, 1)", "5:20: error[E023]: bias.size takes at most one argument, got 2"},
		{"return score + bias.size(dim=0)", "5:30: error[E075]: bias.size takes no keyword argument dim="},
		{"return score + bias.shape", "5:20: error[E028]: bias.shape is a tuple, not a value"},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			src := "# pasted\nbuffer bias: f32[H, 2 * KV - 1]\n\ndef s(score, b, h, q_idx, kv_idx):\n    " + tt.body + "\n"
			_, diags := checkSource(t, src, nil)
			require.True(t, diags.HasErrors())
			assert.Contains(t, diags[0].Render(), tt.want)
		})
	}
}

// TestPortingModuleConstant checks a Python module constant pasted above the
// def that reads it (the FlexAttention blog's sliding window): it is a param,
// so -D overrides it, a local of the same name shadows it as in Python, and
// one bound to anything but an int, float or bool is E042 with a hint for
// the Python form.
func TestPortingModuleConstant(t *testing.T) {
	src := "SLIDING_WINDOW = 1024\n\ndef sliding_window_causal(b, h, q_idx, kv_idx):\n    causal_mask = q_idx >= kv_idx\n    window_mask = q_idx - kv_idx <= SLIDING_WINDOW \n    return causal_mask & window_mask\n\n" +
		"def local(b, h, q_idx, kv_idx):\n    SLIDING_WINDOW = 8\n    return q_idx - kv_idx <= SLIDING_WINDOW\n"
	prog, diags := checkSource(t, src, map[string]string{"SLIDING_WINDOW": "4096"})
	require.False(t, diags.HasErrors(), diags.Render())
	require.Len(t, prog.Params, 1)
	assert.True(t, prog.Params[0].Decl.Python)
	assert.Equal(t, "4096", prog.Params[0].Value.String())
	assert.Contains(t, diags.Render(), "let SLIDING_WINDOW shadows the param SLIDING_WINDOW")

	src = "buffer ids: i32[KV]\n\nwhole = ids\n"
	_, diags = checkSource(t, src, nil)
	require.True(t, diags.HasErrors())
	assert.Contains(t, diags.Render(), "3:9: error[E042]: param whole must be an int, float or bool, got buffer ids")
	assert.Contains(t, diags.Render(), "hint: a Python module constant (NAME = ... at the start of a line) is a param")
}

// TestPortingModuleAlias checks a Python module constant bound to a mod,
// as scripts name the mod they pass to create_block_mask (`mask_mod =
// partial(...)`): each use of the name is that mod, a partial's target is
// the function it binds (not a score for its five parameters), and an
// argument read from a constant assigned again after the line is E042,
// since Python keeps the value it had there.
func TestPortingModuleAlias(t *testing.T) {
	src := "from functools import partial\nSPAN = 8\n\n" +
		"def within(b, h, q_idx, kv_idx, span):\n    return (q_idx - kv_idx).abs() <= span\n\n" +
		"def lower(b, h, q_idx, kv_idx):\n    return kv_idx <= q_idx\n\n" +
		"near = partial(within, span=SPAN)\nboth = and_masks(near, lower)\n\n" +
		"def uses_near(b, h, q_idx, kv_idx):\n    return near(b, h, q_idx, kv_idx) | (kv_idx == 0)\n\n" +
		"def uses_both(b, h, q_idx, kv_idx):\n    return both(b, h, q_idx, kv_idx)\n"
	prog, diags := checkSource(t, src, nil)
	require.False(t, diags.HasErrors(), diags.Render())
	for name, want := range map[string]string{
		"uses_near": "(abs(q - kv) <= 8) | (kv == 0)",
		"uses_both": "abs(q - kv) <= 8 and kv <= q",
	} {
		low, diags := prog.LowerMod(name)
		require.False(t, diags.HasErrors(), diags.Render())
		assert.Equal(t, want, format.Expr(low.Expr), name)
	}

	late := "from functools import partial\nSPAN = 8\n\n" +
		"def within(b, h, q_idx, kv_idx, span):\n    return (q_idx - kv_idx).abs() <= span\n\n" +
		"near = partial(within, span=SPAN)\nSPAN = 16\n\n" +
		"def uses_near(b, h, q_idx, kv_idx):\n    return near(b, h, q_idx, kv_idx)\n"
	_, diags = checkSource(t, late, nil)
	require.True(t, diags.HasErrors())
	assert.Contains(t, diags.Render(), "7:8: error[E042]: near binds a mod when its line runs, reading SPAN, which is assigned on line 8 after it")
	assert.Contains(t, diags.Render(), "hint: Python's near keeps the value SPAN had on this line")
}

// TestPortingSizeConstant: a Python module constant named like a size
// symbol (attention-gym's notebook sets `H = 128` above its mods) is E053
// with a hint that says what H means in a mod and the two ways out.
func TestPortingSizeConstant(t *testing.T) {
	src := "H = 128\n\ndef per_head(b, h, q_idx, kv_idx):\n    return h < H // 2\n"
	_, diags := checkSource(t, src, nil)
	require.True(t, diags.HasErrors())
	out := diags.Render()
	assert.Contains(t, out, "1:1: error[E053]: H cannot be declared: it is the size symbol H")
	assert.Contains(t, out, "hint: in a mod H is the call's size, known at run time: delete this line if the constant is that size")
	_, diags = checkSource(t, "param H = 128\n", nil)
	assert.Contains(t, diags.Render(), "hint: choose another name")
}

// TestPortingPartial: functools.partial binds a def's own parameters, by
// position from the first and by name, and the parameters left are the
// mod's; a def that partial binds is a function, a mod too where it takes
// exactly a mod's parameters. What Python would refuse (a name bound twice
// or before FlexAttention's positional arguments, too many arguments) and
// what is no mod (three parameters left, a factory) are positioned errors.
func TestPortingPartial(t *testing.T) {
	defs := "buffer lens: i32[B, 4]\n" +
		"def kv_offset_mask_flex(b, h, q_idx, kv_idx, offset):\n    return (q_idx + offset) >= kv_idx\n\n" +
		"def causal_mask(rank, b, h, q_idx, kv_idx):\n    return q_idx + rank * 128 >= kv_idx\n\n" +
		"def mode(max_len, lens, b, _, q_idx, kv_idx):\n    return (q_idx >= kv_idx) & (kv_idx < lens[b, 0] + max_len)\n\n" +
		"def bias(score, b, h, q_idx, kv_idx, slope):\n    return score + slope * (kv_idx - q_idx)\n\n" +
		"def plain(b, h, q_idx, kv_idx):\n    return q_idx >= kv_idx\n\n" +
		"def factory(n):\n    def inner(b, h, q_idx, kv_idx):\n        return q_idx >= kv_idx + n\n    return inner\n\n" +
		"def causal_mask_mod(b, h, q_idx, kv_idx, *, context_len):\n    return (q_idx + context_len) >= kv_idx\n\n" +
		"def shifted(b, h, q_idx, kv_idx, *, shift=8):\n    return q_idx + shift >= kv_idx\n\n"
	for _, tc := range []struct {
		name, settings string
		want           string // the lowered mask (and score), or an error
	}{
		{"by name", "mask = partial(kv_offset_mask_flex, offset=16)", "mask q + 16 >= kv"},
		{"by position", "mask = functools.partial(causal_mask, 2)", "mask q + 256 >= kv"},
		{"a buffer bound", "mask = partial(mode, 64, lens)", "mask (q >= kv) & (kv < lens[b, 0] + 64)"},
		{"a score", "mask = plain\n    score = partial(bias, slope=0.5)", "score score + 0.5 * (kv - q)"},
		{"the def itself", "mask = and_masks(plain, partial(plain))", "mask q >= kv and q >= kv"},
		{"bound before the mod's", "mask = partial(causal_mask, rank=1)",
			"error[E023]: partial binds rank by name, but b comes after it: FlexAttention's arguments would fill rank by position too"},
		{"three left", "mask = partial(kv_offset_mask_flex, 1, 2)",
			"error[E023]: partial leaves 3 parameters of kv_offset_mask_flex unbound (q_idx, kv_idx, offset); a mask_mod takes 4 and a score_mod 5"},
		{"no such parameter", "mask = partial(kv_offset_mask_flex, window=1)", "error[E075]: function kv_offset_mask_flex has no parameter window"},
		{"bound twice", "mask = partial(causal_mask, 1, rank=2)", "error[E075]: partial binds rank twice"},
		{"too many", "mask = partial(plain, 1, 2, 3, 4, 5)", "error[E023]: partial binds more arguments by position than plain takes (4)"},
		{"a factory", "mask = partial(factory, 3)", "error[E054]: partial binds the parameters of a def, got factory"},
		{"keyword-only", "mask = partial(causal_mask_mod, context_len=4)", "mask q + 4 >= kv"},
		{"keyword-only by position", "mask = partial(causal_mask_mod, 1, 2, 3, 4, 5)",
			"error[E023]: partial binds more arguments by position than causal_mask_mod takes (4)"},
		{"keyword-only unbound", "mask = partial(causal_mask_mod)",
			"error[E023]: partial leaves context_len of causal_mask_mod unbound, which is taken only by name and has no default"},
		{"keyword-only default", "mask = shifted", "mask q + 8 >= kv"},
		{"keyword-only default bound", "mask = partial(shifted, shift=2)", "mask q + 2 >= kv"},
		{"keyword-only default, called", "mask = and_masks(plain, partial(shifted))", "mask q >= kv and q + 8 >= kv"},
		{"a mask as the score", "mask = plain\n    score = partial(kv_offset_mask_flex, offset=1)",
			"error[E040]: partial(kv_offset_mask_flex, offset=1) is a mask mod, but the score setting needs a score mod"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Every def bound by some partial, as in a file that uses them all.
			all := "attention all {\n    mask = and_masks(partial(causal_mask, 0), partial(mode, 1, lens), partial(kv_offset_mask_flex, offset=0), partial(causal_mask_mod, context_len=0))\n" +
				"    score = partial(bias, slope=1.0)\n}\n"
			src := defs + "attention a {\n    " + tc.settings + "\n}\n" + all
			prog, diags := checkSource(t, src, nil)
			if strings.Contains(tc.want, "error[") {
				assert.Contains(t, diags.Render(), tc.want)
				return
			}
			require.False(t, diags.HasErrors(), diags.Render())
			a := prog.Attentions[0]
			got := ""
			if a.Mask != nil {
				got = "mask " + fmtExpr(a.Mask.Expr)
			}
			if a.Score != nil {
				got = "score " + fmtExpr(a.Score.Expr)
			}
			assert.Equal(t, tc.want, got)
		})
	}
	// Not bound anywhere, a def of five parameters that gives a bool reads
	// as a score, with a hint that names partial.
	_, diags := checkSource(t, "def kv_offset_mask_flex(b, h, q_idx, kv_idx, offset):\n    return (q_idx + offset) >= kv_idx\n", nil)
	assert.Contains(t, diags.Render(), "hint: a def of five parameters is a score_mod (score, b, h, q_idx, kv_idx); bind a mask's own parameter where it is used, partial(kv_offset_mask_flex, offset=...)")
	_, diags = checkSource(t, "def s(score, b, h, q_idx, kv_idx):\n    return q_idx >= kv_idx\n", nil)
	assert.Contains(t, diags.Render(), "hint: to drop pairs from a score, write where(cond, score, -inf); or make it a mask")
}

// TestLowerModHelper: LowerMod of a helper function (FuzzCheck's `def
// s(A): return 0`) reports that it is no mod instead of lowering its int
// result as a mask; a def that functools.partial binds elsewhere and that
// takes exactly a mask's parameters lowers as that mask.
func TestLowerModHelper(t *testing.T) {
	prog, diags := checkSource(t, "def s(a):\n    return 0\n\ndef m(b, h, q_idx, kv_idx):\n    return q_idx >= kv_idx\n\n"+
		"attention x {\n    mask = partial(m)\n}\n", nil)
	require.False(t, diags.HasErrors(), diags.Render())
	low, ld := prog.LowerMod("s")
	assert.Nil(t, low)
	assert.Contains(t, ld.Render(), "Lower needs a mask mod, got the helper function s, which takes 1 parameter")
	low, ld = prog.LowerMod("m")
	require.NotNil(t, low, ld.Render())
	assert.Equal(t, "q >= kv", fmtExpr(low.Expr))
}

// TestPortingReboundConstant: a module constant assigned twice (a notebook
// pasted whole) has its last value, as Python's mods read it when they run
// (W007 on the first assignment); one assigned from its own earlier value
// is E021.
func TestPortingReboundConstant(t *testing.T) {
	src := "WINDOW = 256\nWINDOW = 512\n\ndef m(b, h, q_idx, kv_idx):\n    return q_idx - kv_idx < WINDOW\n"
	p, diags := checkSource(t, src, nil)
	require.False(t, diags.HasErrors(), diags.Render())
	require.Len(t, diags, 1)
	assert.Contains(t, diags[0].Render(), "1:1: warning[W007]: WINDOW is assigned again on line 2")
	require.Len(t, p.Params, 1)
	assert.Equal(t, "512", p.Params[0].Value.String())
	_, diags = checkSource(t, "W = 256\nW = W * 2\n\ndef m(b, h, q_idx, kv_idx):\n    return q_idx - kv_idx < W\n", nil)
	assert.Contains(t, diags.Render(), "2:1: error[E021]: W is assigned again from its own value")
	_, diags = checkSource(t, "param W = 256\nW = 512\n\ndef m(b, h, q_idx, kv_idx):\n    return q_idx - kv_idx < W\n", nil)
	assert.Contains(t, diags.Render(), "2:1: error[E021]: W is already declared") // a `param` is declared once
}

// TestPortingFactoryKeywordOnly: a factory's parameters after a bare `*`
// are bound by name (or their defaults); one passed by position is refused
// naming it, as Python's TypeError would.
func TestPortingFactoryKeywordOnly(t *testing.T) {
	src := "def sliding(scale, *, window, left=0):\n    def m(b, h, q_idx, kv_idx):\n        return q_idx - kv_idx < window * scale + left\n    return m\n" +
		"attention a {\n    mask = sliding(2, window=64)\n}\n"
	p, diags := checkSource(t, src, nil)
	require.False(t, diags.HasErrors(), diags.Render())
	a := p.Attention("a")
	require.NotNil(t, a)
	_, diags = checkSource(t, strings.Replace(src, "sliding(2, window=64)", "sliding(2, 64)", 1), nil)
	assert.Contains(t, diags.Render(), "6:23: error[E023]: sliding takes window only by name (it follows a bare `*`), got an argument by position")
	_, diags = checkSource(t, strings.Replace(src, "sliding(2, window=64)", "sliding(left=1, window=64, scale=2)", 1), nil)
	assert.False(t, diags.HasErrors(), diags.Render())
	// A bare `*` first: every parameter by name.
	first := "def sliding(*, window):\n    return lambda b, h, q_idx, kv_idx: q_idx - kv_idx < window\n" +
		"attention a {\n    mask = sliding(window=64)\n}\n"
	_, diags = checkSource(t, first, nil)
	assert.False(t, diags.HasErrors(), diags.Render())
	_, diags = checkSource(t, strings.Replace(first, "sliding(window=64)", "sliding(64)", 1), nil)
	assert.Contains(t, diags.Render(), "error[E023]: sliding takes window only by name")
}

// TestPortingDeviceAsserts: `assert a.device == b.device` over tensors of
// the call holds (the launcher runs a call only with every tensor on q's
// device), `!=` fails as Python's would, and a constant has no .device.
func TestPortingDeviceAsserts(t *testing.T) {
	body := func(cond string) string {
		return "buffer doc: i32[KV]\n\ndef m(b, h, q_idx, kv_idx):\n    assert " + cond + ", \"devices\"\n    return doc[q_idx] == doc[kv_idx]\n" +
			"attention a {\n    mask = m\n}\n"
	}
	_, diags := checkSource(t, body("doc.device == q_idx.device"), nil)
	assert.False(t, diags.HasErrors(), diags.Render())
	_, diags = checkSource(t, body("kv_idx.device == doc.device"), nil)
	assert.False(t, diags.HasErrors(), diags.Render())
	_, diags = checkSource(t, body("doc.device != q_idx.device"), nil)
	assert.Contains(t, diags.Render(), "error[E078]: assertion doc.device != q_idx.device in def m (line 4) fails")
	_, diags = checkSource(t, body("(3).device == q_idx.device"), nil)
	assert.Contains(t, diags.Render(), "error[E074]: (3) is not a tensor of the call: it has no .device")
}
