package classify

import (
	"flag"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"
)

var (
	propertyCount = flag.Int("classify.props", 3000, "random mask/score expressions TestPropertyRandomMasks generates")
	propertySeed  = flag.Int64("classify.seed", 7, "seed of TestPropertyRandomMasks")
)

// exprGen generates random, well-typed .flex mask and score expressions,
// biased so that many of them are some spelling of a Turbo pattern.
type exprGen struct {
	rng *rand.Rand
}

func (g *exprGen) pick(xs ...string) string { return xs[g.rng.Intn(len(xs))] }

func (g *exprGen) small() int { return g.rng.Intn(8) }

// pattern returns a random spelling of a pattern ingredient.
func (g *exprGen) pattern() string {
	w := g.small()
	r := g.small()
	switch g.rng.Intn(12) {
	case 0, 1:
		return g.pick("q >= kv", "kv <= q", "not (kv > q)", "q - kv >= 0", "~(q < kv)",
			"where(q >= kv, True, False)", "(True if q >= kv else False)", "min(q, kv) == kv", "max(q, kv) == q",
			"kv <= q + KV - Q", "0 <= q - kv")
	case 2, 3:
		return g.pick(
			fmt.Sprintf("q - kv <= %d", w), fmt.Sprintf("q - kv < %d", w), fmt.Sprintf("kv >= q - %d", w),
			fmt.Sprintf("abs(q - kv) <= %d", w), fmt.Sprintf("kv - q <= %d", r), fmt.Sprintf("kv - q < %d", r),
			fmt.Sprintf("0 <= q - kv <= %d", w), fmt.Sprintf("-%d <= q - kv <= %d", r, w),
			fmt.Sprintf("q - kv + KV - Q <= %d", w), "q == kv", "q - kv <= W")
	case 4, 5:
		return g.pick("doc[q] == doc[kv]", "doc[kv] == doc[q]", "ids[q] == ids[kv]", "doc[q] != doc[kv]", "same(b, h, q, kv)")
	case 6:
		return g.pick(fmt.Sprintf("kv < %d", w), fmt.Sprintf("q < %d", w), fmt.Sprintf("kv >= %d", w),
			fmt.Sprintf("q >= %d", w), "kv < Q", "q < KV", "kv < prefix[b]")
	case 7:
		return g.pick("h == 0", "b < 1", "h >= 1", "h != b", fmt.Sprintf("q - kv <= %d + h", w))
	case 8:
		return fmt.Sprintf("%s %s %s", g.intExpr(1), g.pick("<", "<=", ">", ">=", "==", "!="), g.intExpr(1))
	case 9:
		return g.pick("(q - kv) % 3 == 0", "q * kv <= 12", "flag[q]", "bias[h] > 0.5", "q // 2 == kv // 2",
			"(q & 1) == 0", "tanh(1.0 * q) > 0.5")
	case 10:
		return g.pick("True", "False")
	}
	return g.pick("cm(b, h, q, kv)", "win(b, h, q, kv)")
}

// boolExpr returns a random bool expression of at most depth levels.
func (g *exprGen) boolExpr(depth int) string {
	if depth <= 0 || g.rng.Intn(3) == 0 {
		return g.pattern()
	}
	a := g.boolExpr(depth - 1)
	b := g.boolExpr(depth - 1)
	switch g.rng.Intn(10) {
	case 0, 1, 2:
		return fmt.Sprintf("(%s and %s)", a, b)
	case 3, 4:
		return fmt.Sprintf("(%s or %s)", a, b)
	case 5:
		return fmt.Sprintf("not (%s)", a)
	case 6:
		return fmt.Sprintf("((%s) & (%s))", a, b)
	case 7:
		return fmt.Sprintf("((%s) | (%s))", a, b)
	case 8:
		c := g.boolExpr(depth - 1)
		return g.pick(fmt.Sprintf("where(%s, %s, %s)", a, b, c), fmt.Sprintf("(%s if %s else %s)", b, a, c))
	}
	return g.pick(fmt.Sprintf("(%s) == (%s)", a, b), fmt.Sprintf("(%s) != (%s)", a, b), fmt.Sprintf("~(%s)", a))
}

// intExpr returns a random int expression.
func (g *exprGen) intExpr(depth int) string {
	if depth <= 0 || g.rng.Intn(2) == 0 {
		return g.pick("q", "kv", "q", "kv", "b", "h", fmt.Sprint(g.rng.Intn(12)-3), "Q", "KV", "W")
	}
	a, b := g.intExpr(depth-1), g.intExpr(depth-1)
	switch g.rng.Intn(8) {
	case 0, 1:
		return fmt.Sprintf("(%s + %s)", a, b)
	case 2, 3:
		return fmt.Sprintf("(%s - %s)", a, b)
	case 4:
		return fmt.Sprintf("(%d * %s)", g.rng.Intn(5)-2, a)
	case 5:
		return g.pick(fmt.Sprintf("abs(%s)", a), fmt.Sprintf("min(%s, %s)", a, b), fmt.Sprintf("max(%s, %s)", a, b),
			fmt.Sprintf("clamp(%s, 0, %d)", a, g.small()))
	case 6:
		return fmt.Sprintf("(%s if %s else %s)", a, g.pattern(), b)
	}
	return g.pick(fmt.Sprintf("(%s %% 3)", a), fmt.Sprintf("(%s // 2)", a), fmt.Sprintf("(%s * %s)", a, b))
}

// score returns a random score body over s, biased to the score patterns.
func (g *exprGen) score() string {
	return g.pick(
		"s", "s + slopes[h] * (kv - q)", "s - slopes[h] * (q - kv)", "slopes[h] * kv - slopes[h] * q + s",
		"s - slopes[h] * abs(q - kv)", "s - slopes[h] * abs(kv - q)", "s + slopes[h] * (q - kv)",
		"20.0 * tanh(s / 20.0)", "tanh(s / 7.5) * 7.5", "s * 2.0", "2 * s", "s + 0.0",
		"s + (q - kv)", "where(q >= kv, s, -inf)", "s * slopes[h]", "s + bias[h]")
}

const propertyHeader = `
param W = 4
buffer doc: i32[KV] segments
buffer ids: i32[KV]
buffer prefix: i32[B]
buffer flag: bool[Q]
buffer bias: f32[H]
buffer slopes: f32[H]
mask cm(b, h, q, kv) = q >= kv
mask win(b, h, q, kv) = q - kv <= W
mask same(b, h, q, kv) = doc[q] == doc[kv]
`

// TestPropertyRandomMasks generates random mask and score expressions,
// compiles them through the parser and checker, classifies them, and
// checks every claim (canonical form, pattern and kwargs under their
// preconditions, scores, never-true, empty rows) against the evaluator at
// every point of many small shapes. Zero disagreements are allowed.
func TestPropertyRandomMasks(t *testing.T) {
	total := *propertyCount
	if testing.Short() {
		total = 300
	}
	const perFile = 25
	g := &exprGen{rng: rand.New(rand.NewSource(*propertySeed))}
	hits := map[string]int{}
	var shapes [][2]int64
	for _, q := range []int64{1, 2, 3, 5, 8} {
		for _, kv := range []int64{1, 2, 3, 5, 8} {
			shapes = append(shapes, [2]int64{q, kv})
		}
	}
	for _, n := range []int64{4, 6, 7, 11, 13} {
		shapes = append(shapes, [2]int64{n, n})
	}
	bad := 0
	for file := 0; file*perFile < total; file++ {
		var src strings.Builder
		src.WriteString(propertyHeader)
		for i := 0; i < perFile; i++ {
			fmt.Fprintf(&src, "mask m%d(b, h, q, kv) = %s\n", i, g.boolExpr(g.rng.Intn(4)))
			fmt.Fprintf(&src, "attention a%d {\n    mask = m%d\n", i, i)
			if g.rng.Intn(3) == 0 {
				fmt.Fprintf(&src, "    score = s%d\n", i)
			}
			src.WriteString("}\n")
		}
		// Score mods are declared after the blocks that use them.
		text := src.String()
		for i := 0; i < perFile; i++ {
			if strings.Contains(text, fmt.Sprintf("score = s%d\n", i)) {
				text += fmt.Sprintf("score s%d(s, b, h, q, kv) = %s\n", i, g.score())
			}
		}
		p, plan, diags := compileSrc(t, fmt.Sprintf("random%d.flex", file), text, nil)
		for _, d := range plan.Attentions {
			hits[d.Pattern]++
			if d.Score != "" && d.Score != ScoreNone {
				hits["score "+d.Score]++
			}
			if d.Form.TooComplex {
				hits["too complex"]++
			}
		}
		for _, dg := range diags {
			hits[string(dg.Code)]++
		}
		o := &oracle{t: t, prog: p, plan: plan, diags: diags, rng: g.rng, maxRun: 3, checked: map[string]int{}, maxBad: 5}
		for _, s := range shapes {
			o.verifyShape(2, 2, s[0], s[1])
		}
		bad += o.bad
		if bad > 0 {
			t.Fatalf("%d disagreements in file %d", bad, file)
		}
	}
	keys := make([]string, 0, len(hits))
	for k := range hits {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var report []string
	for _, k := range keys {
		report = append(report, fmt.Sprintf("%s=%d", k, hits[k]))
	}
	t.Logf("%d expressions: %s", total, strings.Join(report, " "))
	for _, p := range []string{PatternFull, PatternCausal, PatternSWCausal, PatternSW, PatternDoc, PatternDocCausal} {
		if hits[p] == 0 {
			t.Errorf("no random expression hit pattern %s: the generator is not biased enough", p)
		}
	}
}
