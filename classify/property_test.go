package classify

import (
	"flag"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/maskc/maskc/normal/normaltest"
)

var (
	propertyCount = flag.Int("classify.props", 3000, "random mask/score expressions TestPropertyRandomMasks generates")
	propertySeed  = flag.Int64("classify.seed", 7, "seed of TestPropertyRandomMasks")
)

// TestPropertyRandomMasks generates random mask and score expressions,
// compiles them through the parser and checker, classifies them, and
// checks every claim (canonical form, pattern and kwargs under their
// preconditions, scores, never-true, empty rows) against the evaluator at
// every point of many small shapes. It checks the normal form's other
// consumer on the same masks: codegen's block sparsity (kv ranges,
// intervals and full tiles, consumers_test.go). Zero disagreements are
// allowed.
func TestPropertyRandomMasks(t *testing.T) {
	total := *propertyCount
	if testing.Short() {
		total = 300
	}
	const perFile = 25
	g := &normaltest.Gen{Rng: rand.New(rand.NewSource(*propertySeed))}
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
		src.WriteString(normaltest.Header)
		for i := 0; i < perFile; i++ {
			fmt.Fprintf(&src, "mask m%d(b, h, q, kv) = %s\n", i, g.BoolExpr(g.Rng.Intn(4)))
			fmt.Fprintf(&src, "attention a%d {\n    mask = m%d\n", i, i)
			if g.Rng.Intn(3) == 0 {
				fmt.Fprintf(&src, "    score = s%d\n", i)
			}
			src.WriteString("}\n")
		}
		// Score mods are declared after the blocks that use them.
		text := src.String()
		for i := 0; i < perFile; i++ {
			if strings.Contains(text, fmt.Sprintf("score = s%d\n", i)) {
				text += fmt.Sprintf("score s%d(s, b, h, q, kv) = %s\n", i, g.Score())
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
		kernels := generateAll(p)
		for _, k := range kernels {
			if k != nil {
				hits["kernel "+string(k.Sparsity)]++
			}
		}
		o := &oracle{t: t, prog: p, plan: plan, diags: diags, rng: g.Rng, maxRun: 3, checked: map[string]int{}, maxBad: 5, kernels: kernels}
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
