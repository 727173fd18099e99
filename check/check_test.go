package check

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/internal/golden"
	"github.com/maskc/maskc/parser"
)

// checkSource parses and checks src, failing the test on syntax errors.
func checkSource(t testing.TB, src string, defines map[string]string) (*Program, dsl.Diagnostics) {
	t.Helper()
	f, diags := parser.ParseFile("test.flex", []byte(src))
	require.False(t, diags.HasErrors(), "syntax errors in test source:\n%s", diags.Render())
	return Check(f, Options{Defines: defines})
}

// checkGolden compares got with testdata/name, or rewrites it under -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.CheckString(t, filepath.Join("testdata", name), got)
}

// blowUp is a file whose mods double in size at each level.
func blowUp(levels int) string {
	var b strings.Builder
	b.WriteString("mask m0(b, h, q, kv) = q >= kv\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "mask m%d(b, h, q, kv) = m%d(b, h, q, kv) and m%d(b, h, kv, q)\n", i, i-1, i-1)
	}
	fmt.Fprintf(&b, "attention big {\n    mask = m%d\n}\n", levels)
	return b.String()
}

// diagnosticCases holds one small file per diagnostic code; the rendered
// diagnostics of all of them are pinned in testdata/diagnostics.golden.
var diagnosticCases = []struct {
	code    dsl.Code
	src     string
	defines map[string]string
}{
	{CodeUnknownName, "mask m(b, h, q, kv) = q >= kvv\n", nil},
	{CodeDuplicate, "param W = 1\nparam W = 2\nmask m(b, h, q, kv) = q - kv <= W\n", nil},
	{CodeModParamCount, "mask m(b, h, q) = True\n", nil},
	{CodeArgCount, "mask m(b, h, q, kv) = abs(q, kv) > 0\n", nil},
	{CodeMaskNotBool, "mask m(b, h, q, kv) = q - kv\n", nil},
	{CodeScoreNotFloat, "score s(score, b, h, q, kv) = q >= kv\n", nil},
	{CodeLogicalNotBool, "mask m(b, h, q, kv) = q and kv\n", nil},
	// In-place under torch: a parameter, an index tensor, an alias, a
	// helper's returned argument.
	{CodeInPlaceShared, "def bump(v):\n    v += 1\n    return v\n\ndef m(b, h, q_idx, kv_idx):\n    return bump(q_idx) + q_idx >= kv_idx\n", nil},
	{CodeInPlaceShared, "def m(b, h, q_idx, kv_idx):\n    q = q_idx\n    q_idx += 1\n    return q >= kv_idx\n", nil},
	{CodeInPlaceShared, "def m(b, h, q_idx, kv_idx):\n    x = q_idx * 2\n    y = x\n    x += 1\n    return y >= kv_idx\n", nil},
	{CodeInPlaceShared, "def same(v):\n    return v\n\ndef m(b, h, q_idx, kv_idx):\n    x = q_idx * 2\n    y = same(x)\n    x <<= 1\n    return y >= kv_idx\n", nil},
	{CodeBitwiseOperand, "mask m(b, h, q, kv) = (q >= kv) & 1\n", nil},
	{CodeBitwiseOperand, "mask m(b, h, q, kv) = (q >= kv) ^ 1\n", nil},
	{CodeBitwiseOperand, "score s(score, b, h, q, kv) = score << 1\n", nil},
	{CodeFoldError, "mask m(b, h, q, kv) = q >> -1 >= kv\n", nil},
	{CodeFoldError, "mask m(b, h, q, kv) = 1 << 64 >= kv\n", nil},
	{CodeNotAValue, "buffer doc: i32[KV]\nmask m(b, h, q, kv) = doc == 1\n", nil},
	{CodeConditionNotBool, "mask m(b, h, q, kv) = where(q, True, False)\n", nil},
	{CodeIndexCount, "buffer bias: f32[H, 8191]\nmask m(b, h, q, kv) = bias[h] > 0\n", nil},
	{CodeIndexNotInt, "buffer doc: i32[KV]\nmask m(b, h, q, kv) = doc[kv / 2] == 0\n", nil},
	{CodeNotABuffer, "mask m(b, h, q, kv) = q[0] == 1\n", nil},
	{CodeBadDim, "buffer t: f32[KV * KV]\nscore s(score, b, h, q, kv) = score + t[kv]\n", nil},
	{CodeUnknownDType, "buffer t: u16[KV]\nmask m(b, h, q, kv) = t[kv] == 0\n", nil},
	{CodeUnknownProperty, "buffer t: i32[KV] sorted\nmask m(b, h, q, kv) = t[kv] == t[q]\n", nil},
	{CodeBadSegments, "buffer t: f32[KV] segments\nmask m(b, h, q, kv) = t[kv] == t[q]\n", nil},
	{CodeDivisionByZero, "mask m(b, h, q, kv) = q // 0 == 1\n", nil},
	{CodeFoldError, "param BIG = 2 ** 63\nmask m(b, h, q, kv) = q < BIG\n", nil},
	{CodeRecursion, "mask ping(b, h, q, kv) = pong(b, h, q, kv)\nmask pong(b, h, q, kv) = q > 0 and ping(b, h, q - 1, kv)\n", nil},
	{CodeModKindMismatch, "attention a {\n    mask = softcap(30.0)\n}\n", nil},
	{CodeParamNotConst, "param N = Q // 2\nmask m(b, h, q, kv) = q < N\n", nil},
	{CodeParamType, "param M = causal\nmask m(b, h, q, kv) = M\n", nil},
	{CodeDefineUnknown, "param WINDOW = 128\nmask m(b, h, q, kv) = q - kv <= WINDOW\n", map[string]string{"WINDOWS": "256"}},
	{CodeDefineValue, "param WINDOW = 128\nmask m(b, h, q, kv) = q - kv <= WINDOW\n", map[string]string{"WINDOW": "1.5"}},
	{CodeFactoryArg, "attention a {\n    mask = sliding_window(Q // 8)\n}\n", nil},
	{CodeFactoryNoArgs, "attention a {\n    mask = sliding_window\n}\n", nil},
	{CodeNotCallable, "param W = 4\nmask m(b, h, q, kv) = W(q) > 0\n", nil},
	{CodeUnknownSetting, "attention a {\n    casual = true\n}\n", nil},
	{CodeDuplicateSetting, "attention a {\n    causal = true\n    causal = false\n}\n", nil},
	{CodeSettingType, "attention a {\n    causal = 1\n}\n", nil},
	{CodeSettingRange, "attention a {\n    head_dim = 100\n}\n", nil},
	{CodeUnknownWord, "attention a {\n    layout = bsdh\n}\n", nil},
	{CodeReservedName, "param Q = 4\n", nil},
	{CodeNotAMod, "attention a {\n    mask = causal(0, 0, 1, 2)\n}\n", nil},
	{CodeTooLarge, blowUp(18), nil},
	{CodeArgType, "mask m(b, h, q, kv) = causal(b, h, q / 2, kv)\n", nil},
	{CodeSettingBuffer, "buffer s: f32[Q]\nattention a {\n    sink = s\n}\n", nil},
	{CodeUnusedParam, "param W = 4\n", nil},
	{CodeUnusedBuffer, "buffer doc: i32[KV]\n", nil},
	{CodeUnusedMod, "mask m(b, h, q, kv) = q > kv\nattention a {\n    mask = causal\n}\n", nil},
	{CodeUnusedLet, "mask m(b, h, q, kv) {\n    let d = q - kv\n    q >= kv\n}\n", nil},
	{CodeShadow, "param W = 4\nmask m(b, h, q, kv) {\n    let W = 8\n    q - kv <= W\n}\nmask n(b, h, q, kv) = q < W\n", nil},
	{CodeBitwisePrecedence, "mask m(b, h, q, kv) = q >= kv & q < 5\n", nil},
	{CodeRebound, "W = 4\nW = 8\nmask m(b, h, q, kv) = q - kv <= W\nattention a {\n    mask = m\n}\n", nil},
	{CodeNoGradient, "buffer t: f32[H]\nscore s(score, b, h, q, kv) = floor(score) + t[h] * (score > 0) + where(floor(score) > 1, score, 0.0)\nattention a {\n    score = s\n}\n", nil},
	{CodeStringValue, "def m(b, h, q_idx, kv_idx):\n    return q_idx >= \"kv_idx\"\n", nil},
	{CodeMethod, "def m(b, h, q_idx, kv_idx):\n    d = (q_idx - kv_idx).sum()\n    return d <= 4\n", nil},
	{CodeKeywordArg, "def s(score, b, h, q_idx, kv_idx):\n    return score + torch.div(q_idx, 2, rounding_mode=\"round\")\n", nil},
	{CodeTorchBool, "def m(b, h, q_idx, kv_idx):\n    return q_idx >= kv_idx and q_idx - kv_idx < 4\n", nil},
	{CodeUnboundLocal, "def generate(W: int):\n    def m(b, h, q_idx, kv_idx):\n        W = W * 2\n        return q_idx - kv_idx <= W\n    return m\n\nattention a {\n    mask = generate(4)\n}\n", nil},
	{CodeStatement, "def m(b, h, q_idx, kv_idx):\n    if q_idx > kv_idx:\n        return True\n    return False\n", nil},
	{CodeConversion, "def s(score, b, h, q_idx, kv_idx):\n    return score + (q_idx - kv_idx).to(torch.bfloat16)\n", nil},
	{CodeSetupTensor, "def blocks(n):\n    sel = torch.rand(n, n) < 0.1\n    def m(b, h, q_idx, kv_idx):\n        return sel[q_idx // 128, kv_idx // 128]\n    return m\n\nattention a {\n    mask = blocks(64)\n}\n", nil},
	{CodeIntPower, "mask m(b, h, q, kv) = 2 ** -(kv % 3) < 0.5\n", nil},
	{CodeFloat32Range, "param C = 30.0\nscore s(score, b, h, q, kv) = C * tanh(score / C)\nattention a {\n    score = s\n}\n", map[string]string{"C": "1e39"}},
}

func TestDiagnosticsGolden(t *testing.T) {
	var out strings.Builder
	for _, tc := range diagnosticCases {
		_, diags := checkSource(t, tc.src, tc.defines)
		codes := make([]dsl.Code, 0, len(diags))
		for _, d := range diags {
			codes = append(codes, d.Code)
		}
		assert.Contains(t, codes, tc.code, "case %s reports %v:\n%s", tc.code, codes, diags.Render())
		fmt.Fprintf(&out, "===== %s: %s\n%s\n", tc.code, Codes[tc.code], diags.Render())
	}
	checkGolden(t, "diagnostics.golden", out.String())
}

func TestEveryCodeHasACase(t *testing.T) {
	covered := map[dsl.Code]bool{}
	for _, tc := range diagnosticCases {
		covered[tc.code] = true
	}
	var missing []string
	for code := range Codes {
		if !covered[code] {
			missing = append(missing, string(code))
		}
		assert.Regexp(t, `^(E0[2-9][0-9]|W0[0-4][0-9])$`, string(code), "code outside the checker's ranges")
	}
	sort.Strings(missing)
	assert.Empty(t, missing, "codes without a case in diagnosticCases")
}
