package codegen

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"
)

// casesOf generates every attention block of a checked .flex text.
func casesOf(t *testing.T, name, text string) []hostCase {
	t.Helper()
	return casesWith(t, name, text, Options{})
}

// casesWith is casesOf with options.
func casesWith(t *testing.T, name, text string, opts Options) []hostCase {
	t.Helper()
	p := checkSource(t, name, text)
	var out []hostCase
	for _, a := range p.Attentions {
		k, diags := Generate(p, a, opts)
		if diags.HasErrors() {
			t.Fatalf("%s: %s", name, diags.Render())
		}
		out = append(out, hostCase{name: name + ":" + a.Name, prog: p, attn: a, kernel: k})
	}
	return out
}

// overflows reports whether generating text is refused for int64 overflow
// (E311) only.
func overflows(t *testing.T, text string) bool {
	t.Helper()
	p := checkSource(t, "o.flex", text)
	for _, a := range p.Attentions {
		if _, diags := Generate(p, a, Options{}); diags.HasErrors() {
			return len(diags) > 0 && diags[0].Code == CodeIntOverflow
		}
	}
	return false
}

// maskCases are masks and scores chosen for Python semantics and for the
// block-sparsity analysis: negative floor division and modulo, promotion,
// powers, min/max/abs/clamp, conditionals, every buffer element type, reads
// out of range, bands, disjunctions, head- and batch-dependent masks.
var maskCases = []struct{ name, decls, mask, score string }{
	{"floor", "", "(q - kv) // 3 == (q - 2 * kv) % 5 - 2", ""},
	// bitwise ints: ^, << and >> (Python's floor shifts, negative values
	// shifted left through unsigned bits, counts past the width), ~ on
	// int32, ^ of two bools
	{"bit_xor", "", "(q ^ kv) < 8 or ((q & 7) ^ (kv & 7)) == 0", ""},
	{"shifts", "", "(q >> 2) == (kv >> 2) and (q << 3) - (kv << 3) >= -16", ""},
	{"shift_by_var", "", "(q >> (kv % 5)) >= (kv >> 1) - 3", ""},
	{"shift_negative", "", "(q - 3 * kv) >> 1 <= (kv - q) << 2", ""},
	{"shift_past_width", "", "(q - 40) >> (kv % 70) >= -1 - (q >> (kv % 40))", ""},
	{"invert", "", "~q + kv >= ~(kv - 3)", ""},
	{"morton_bits", "", "(((q >> 1) & 21) ^ (kv & 21)) <= 4 or (q ^ kv) & 1 == 0", ""},
	{"bool_xor", "", "(q >= kv) ^ (q - kv < 4)", ""},
	// int powers whose exponent is e % c (issue 31), narrowed and in 64 bits
	{"pow_mod_exponent", "", "2 ** (kv % 3) + (q - kv) ** (q % 2) <= q + 4", ""},
	{"pow_mod_exponent_64", "", "(q + 70000) ** (kv % 2) > kv + 70000", ""},
	{"floor_neg_divisor", "", "(kv - q) // -4 >= (q % -3) + 1", ""},
	{"band", "", "kv - q <= 3 and q - kv <= 5", ""},
	{"strict_band", "", "-7 < q - kv < 2", ""},
	{"scaled", "", "2 * q - 3 * kv >= -4", ""},
	{"abs_window", "", "abs(q - kv) <= 6", ""},
	{"abs_outside", "", "abs(q - kv) > 6", ""},
	{"min_max", "", "min(q, 40) >= kv and max(kv, 8) <= q + 3", ""},
	{"clamp", "", "clamp(q - kv, -2, 9) == q - kv", ""},
	{"not_equal", "", "q != kv", ""},
	{"equal", "", "q == kv + 2 or kv == 0", ""},
	{"negation", "", "not (kv > q) and ~(q - kv > 9)", ""},
	{"where_mask", "", "where(q >= kv, True, False)", ""},
	{"cond", "", "(q >= kv) if h % 2 == 0 else (kv >= q)", ""},
	{"head_dep", "", "(h < 2 and q >= kv) or (h >= 2 and q - kv < 4)", ""},
	{"batch_dep", "", "q + b >= kv", ""},
	{"sizes", "", "kv <= q + KV - Q and kv < KV // 2 + 7", ""},
	{"q_only", "", "q >= 10 and kv < 20 or q < 3", ""},
	{"many_disjuncts", "", "kv == 0 or kv == 3 or kv == 6 or kv == 9 or q == kv + 12 or kv == 15 or kv == 18 or kv == 21 or q == 2 * kv", ""},
	// 24 terms, each walked as its own kv interval (maxKVIntervals); 26, walked as their hull.
	{"union_24", "", "kv == 0 or kv == 3 or kv == 6 or kv == 9 or kv == 12 or kv == 15 or kv == 18 or kv == 21 or kv == 24 or kv == 27 or kv == 30 or kv == 33 or kv == 36 or kv == 39 or kv == 42 or kv == 45 or kv == 48 or kv == 51 or kv == 54 or kv == 57 or kv == 60 or kv == 63 or q == kv + 12 or q == 2 * kv", ""},
	{"union_26", "", "kv == 1 or kv == 3 or kv == 5 or kv == 7 or kv == 9 or kv == 11 or kv == 13 or kv == 15 or kv == 17 or kv == 19 or kv == 21 or kv == 23 or kv == 25 or kv == 27 or kv == 29 or kv == 31 or kv == 33 or kv == 35 or kv == 37 or kv == 39 or kv == 41 or kv == 43 or kv == 45 or kv == 47 or q == kv + 5 or q == 3 * kv", ""},
	{"never", "", "q < kv and kv < q", ""},
	{"prefix_or", "", "kv < 5 or q >= kv or kv > 60", ""},
	{"float_cmp", "", "q / 2 >= kv / 3", ""},
	{"float_floor", "", "(q * 1.5) // 4.0 == kv % 2.5 + (q - kv) % 3", ""},
	{"pow_int", "", "(q - kv) ** 2 <= 49", ""},
	{"bool_arith", "", "(q >= kv) + (kv >= 3) == 2", ""},
	{"bool_eq", "", "(q >= kv) == (kv % 2 == 0)", ""},
	{"bitwise_int", "", "(q & 6) == (kv | 1) - 1", ""},
	{"i32_lookup", "buffer t: i32[KV]\n", "t[kv] + q >= t[q] and t[q - kv] == 0", ""},
	{"i64_2d", "buffer t: i64[H, 9]\n", "t[h, q - kv] >= 0", ""},
	{"bool_table", "buffer allowed: bool[Q, KV]\n", "allowed[q, kv] or q == kv", ""},
	{"batch_prefix", "buffer plen: i32[B]\n", "kv < plen[b] or q >= kv", ""},
	// Unions whose ranges are all prefixes or all suffixes, walked as one
	// interval (unionIsHull): Transfusion's spans, a suffix union.
	{"span_prefixes", "buffer sp: i32[B, 3, 2]\n", "q >= kv or q >= sp[b, 0, 0] and kv < sp[b, 0, 0] + sp[b, 0, 1] or q >= sp[b, 1, 0] and kv < sp[b, 1, 0] + sp[b, 1, 1] or q >= sp[b, 2, 0] and kv < sp[b, 2, 0] + sp[b, 2, 1]", ""},
	{"suffix_union", "", "kv >= q or kv >= 40 or q < 3 and kv > 7", ""},
	// N-D buffers (issue 27): row-major reads of rank 3, 4 and 8, in range
	// and out of it (a middle index below 0 or past its extent).
	{"i32_3d", "buffer t: i32[H, 3, KV]\n", "t[h, q % 3, kv] >= 0 or q == kv", ""},
	{"bool_3d_oob", "buffer a: bool[Q, 4, KV]\n", "a[q, q - kv, kv] or q == kv", ""},
	{"i16_4d", "buffer t: i16[B, H, 2, KV]\n", "t[b, h, (q + kv) % 2, kv] < 0 or q >= kv", ""},
	{"sel_3d", "buffer sel: i32[H, 8, 2]\n", "kv <= q and (q // 16 == kv // 16 or sel[h, q // 16, 0] == kv // 16 or sel[h, q // 16, 1] == kv // 16)", ""},
	{"f32_4d_score", "buffer w: f32[B, H, 2, 9]\n", "q >= kv", "score + w[b, h, q % 2, q - kv]"},
	{"i8_8d", "buffer t: i8[2, 2, 2, 2, 2, 2, 2, KV]\n", "t[q % 2, kv % 2, h % 2, b % 2, 1, 0, (q // 2) % 2, kv] > 0 or q == kv", ""},
	{"segments", "buffer doc: i32[KV] segments\n", "doc[q] == doc[kv]", ""},
	{"segments_causal", "buffer doc: i64[KV] segments\n", "doc[kv] == doc[q] and q >= kv and q - kv < 20", ""},
	{"segments_or", "buffer doc: i32[KV] segments\n", "doc[q] == doc[kv] or kv < 3", ""},
	{"not_segments", "buffer doc: i32[KV]\n", "doc[q] == doc[kv]", ""},
	{"u8_table", "buffer t: u8[KV]\n", "t[kv] + q >= 200 or t[q] == 255 or t[q - kv] == 0", ""},
	{"i8_signed", "buffer t: i8[H, 9]\n", "t[h, q - kv] < 0 or t[h, q - kv] == 127 or q == kv", ""},
	{"i16_doc", "buffer doc: i16[KV]\n", "doc[q] == doc[kv] and q >= kv", "score + doc[kv] * 0.5 - doc[q]"},
	{"softcap", "", "q >= kv", "30.0 * tanh(score / 30.0)"},
	{"alibi", "", "", "score + (kv - q) * 2 ** (-8 * (h + 1) / H)"},
	{"slopes", "buffer s: f32[H]\n", "", "score + s[h] * (kv - q)"},
	{"bias_f16", "buffer bias: f16[H, 2 * KV - 1]\n", "", "score + bias[h, q - kv + KV - 1]"},
	{"bias_bf16_oob", "buffer bias: bf16[4, 5]\n", "", "score + bias[h, q - kv]"},
	{"f64_table", "buffer w: f64[Q]\n", "w[q] > -1.0", "score * w[q] - sigmoid(score) + exp2(w[q] / 8.0)"},
	{"score_math", "", "", "max(score, -3.0) + min(q, kv) + abs(q - kv) ** 0.5 + floor(score) - ceil(score / 3.0) + log(1.0 + exp(score / 9.0)) + sqrt(abs(score)) + log2(2.0 + q)"},
	{"score_where", "", "", "where(q >= kv, score, -inf)"},
	{"score_int", "", "", "(q - kv) // 2"},
	{"int_trunc", "", "int((q - kv) / 3) == (q - kv) // 3 or kv % 3 == 0", ""},
	{"int_casts", "", "", "score + int((q - kv) * 0.75) + int(float(kv) / -3.0) + float(q >= kv)"},
	{"t5_bucket", "buffer tb: f32[H, 16]\n", "", "score + tb[h, where(abs(q - kv) < 8, abs(q - kv), min(8 + int(log(float(abs(q - kv)) / 8) / log(16.0) * 8), 15))]"},
	{"int_nonfinite", "", "", "score + where(q > kv, int(log(float(q - kv))), -1) + where(kv > q + 1, int(-log(float(q - kv + 1)) * 0.0), 0) + where(q == kv, int(log(float(q - kv))) // 2 ** 62, 0) + where(q == kv, int(-log(float(q - kv))) // 2 ** 62, 0)"},
}

// exactAnalysis names the maskCases whose kv ranges and full tiles the
// analysis must get exactly, not just soundly: conjunctions of linear
// constraints and of constraints on b and h.
var exactAnalysis = map[string]bool{
	"band": true, "strict_band": true, "scaled": true, "abs_window": true, "not_equal": false,
	"negation": true, "where_mask": true, "head_dep": true, "batch_dep": true, "sizes": true,
	"batch_prefix": true, "min_max": true, "softcap": true, "alibi": true,
	"clamp": true, "equal": true, "q_only": true, "prefix_or": true, "cond": true, "many_disjuncts": true, "union_24": true, "union_26": true, "never": true,
}

// maskCaseSource renders one maskCases entry as a .flex file.
func maskCaseSource(decls, mask, score string) string {
	var b strings.Builder
	b.WriteString(decls)
	var settings []string
	if mask != "" {
		fmt.Fprintf(&b, "mask m(b, h, q, kv) = %s\n", mask)
		settings = append(settings, "    mask = m")
	}
	if score != "" {
		fmt.Fprintf(&b, "score s_mod(score, b, h, q, kv) = %s\n", score)
		settings = append(settings, "    score = s_mod")
	}
	fmt.Fprintf(&b, "attention a {\n%s\n}\n", strings.Join(settings, "\n"))
	return b.String()
}

// runProperty generates, compiles and checks cases on tilesPer random tiles
// each; it returns the number of full tiles seen. It also requires the host
// evaluator of the sparsity plan to have agreed with the compiled
// functions on most tiles.
func runProperty(t *testing.T, cases []hostCase, tilesPer int, seed int64) int {
	t.Helper()
	exe := buildHost(t, cases)
	r := rand.New(rand.NewSource(seed))
	var tiles []tileCase
	for i, c := range cases {
		for j := 0; j < tilesPer; j++ {
			tiles = append(tiles, randomTile(r, i, c))
		}
	}
	full, agreed := checkTiles(t, cases, tiles, runHost(t, exe, cases, tiles))
	t.Logf("the host sparsity evaluator agreed with the compiled functions on %d of %d tiles", agreed, len(tiles))
	searched, unsorted := 0, 0 // tiles of kernels that search segments, and those with ids out of order
	for _, tc := range tiles {
		if c := cases[tc.idx]; len(c.kernel.sparsity.segments()) > 0 {
			searched++
			if !tc.sorted(c) {
				unsorted++
			}
		}
	}
	if searched > 0 && unsorted < searched/4 {
		t.Errorf("only %d of %d tiles of segment-searching kernels have ids out of order: the unsorted paths are not exercised", unsorted, searched)
	}
	if agreed < len(tiles)*3/4 {
		t.Errorf("the host sparsity evaluator was compared on %d of %d tiles only", agreed, len(tiles))
	}
	return full
}

// goldenCases is a host case per attention of every golden input
// (testdata/golden/*.flex), generated with default options.
func goldenCases(t *testing.T) []hostCase {
	t.Helper()
	var cases []hostCase
	files, _ := filepath.Glob("testdata/golden/*.flex")
	for _, f := range files {
		p := loadProgram(t, f)
		for _, a := range p.Attentions {
			k, diags := Generate(p, a, Options{})
			if diags.HasErrors() {
				t.Fatal(diags.Render())
			}
			cases = append(cases, hostCase{name: f + ":" + a.Name, prog: p, attn: a, kernel: k})
		}
	}
	return cases
}

// TestHostSemantics checks Python semantics of the generated functions and
// the soundness of the sparsity functions on the hand-picked cases and on
// every golden input.
func TestHostSemantics(t *testing.T) {
	var cases []hostCase
	for _, mc := range maskCases {
		cases = append(cases, casesOf(t, mc.name+".flex", maskCaseSource(mc.decls, mc.mask, mc.score))...)
	}
	for i := range cases {
		cases[i].exact = exactAnalysis[strings.TrimSuffix(strings.SplitN(cases[i].name, ":", 2)[0], ".flex")]
	}
	cases = append(cases, goldenCases(t)...)
	full := runProperty(t, cases, 40, 1)
	if full == 0 {
		t.Errorf("no tile was found full: the full-tile path is not exercised")
	}
	t.Logf("%d cases, %d full tiles", len(cases), full)
}

// exprGen draws random .flex mask expressions from the grammar, biased
// towards the shapes the sparsity analysis interprets (linear comparisons,
// abs/min/max, segments equality) mixed with ones it must treat as opaque.
type exprGen struct{ r *rand.Rand }

func (g exprGen) pick(xs ...string) string { return xs[g.r.Intn(len(xs))] }

func (g exprGen) small() string { return fmt.Sprint(g.r.Intn(41) - 20) }

func (g exprGen) intExpr(depth int) string {
	if depth <= 0 || g.r.Intn(3) == 0 {
		return g.pick("q", "kv", "q", "kv", "b", "h", "Q", "KV", g.small(), g.small())
	}
	d := depth - 1
	switch g.r.Intn(12) {
	case 0, 1:
		return "(" + g.intExpr(d) + " + " + g.intExpr(d) + ")"
	case 2, 3:
		return "(" + g.intExpr(d) + " - " + g.intExpr(d) + ")"
	case 4:
		return g.pick("2", "3", "-1", "-2") + " * " + g.intExpr(d)
	case 5:
		return "(" + g.intExpr(d) + " // " + g.pick("2", "3", "-4", "7") + ")"
	case 6:
		return "(" + g.intExpr(d) + " % " + g.pick("2", "3", "-4", "5") + ")"
	case 7:
		return "abs(" + g.intExpr(d) + ")"
	case 8:
		return g.pick("min", "max") + "(" + g.intExpr(d) + ", " + g.intExpr(d) + ")"
	case 9:
		return "t[" + g.intExpr(d) + "]"
	case 10:
		return "(" + g.intExpr(d) + " * " + g.intExpr(d) + ")"
	default:
		return "-" + g.intExpr(d)
	}
}

// blockSide draws floor((a*v + c) / d) or a*v + c: one side of a block
// relation (block indices in normal's form), sometimes one the analysis
// cannot read.
func (g exprGen) blockSide(v string) string {
	lin := g.pick("", "2 * ", "3 * ", "-1 * ") + v + g.pick("", " + 3", " - 5", " + h", " - Q // 2")
	if g.r.Intn(4) == 0 {
		return lin
	}
	return "(" + lin + ") // " + g.pick("2", "3", "4", "7", "16", "-4")
}

func (g exprGen) boolExpr(depth int) string {
	if depth <= 0 || g.r.Intn(4) == 0 {
		switch g.r.Intn(8) {
		case 0:
			return "doc[q] == doc[kv]"
		case 1:
			return g.pick("True", "False", "h % 2 == 0", "b < 1")
		case 2: // block indices: chunks, block-causal, strided
			return g.blockSide("q") + " " + g.pick("<", "<=", ">", ">=", "==", "!=") + " " + g.blockSide("kv")
		}
		return g.intExpr(2) + " " + g.pick("<", "<=", ">", ">=", "==", "!=") + " " + g.intExpr(2)
	}
	d := depth - 1
	switch g.r.Intn(7) {
	case 0, 1:
		return "(" + g.boolExpr(d) + " and " + g.boolExpr(d) + ")"
	case 2, 3:
		return "(" + g.boolExpr(d) + " or " + g.boolExpr(d) + ")"
	case 4:
		return "not " + g.boolExpr(d)
	case 5:
		return "where(" + g.boolExpr(d) + ", " + g.boolExpr(d) + ", " + g.boolExpr(d) + ")"
	default:
		return "(" + g.boolExpr(d) + " if " + g.boolExpr(d) + " else " + g.boolExpr(d) + ")"
	}
}

// TestHostRandomMasks checks maskc_mask against the evaluator and the
// soundness of maskc_kv_range and maskc_tile_full on random masks.
func TestHostRandomMasks(t *testing.T) {
	n := 150
	if testing.Short() {
		n = 40
	}
	g := exprGen{rand.New(rand.NewSource(7))}
	var cases []hostCase
	analytic, blocks := 0, 0
	for i := 0; i < n; i++ {
		src := maskCaseSource("buffer doc: i32[KV] segments\nbuffer t: i32[KV]\n", g.boolExpr(3), "")
		for overflows(t, src) { // refused (E311): products of lengths can leave int64
			src = maskCaseSource("buffer doc: i32[KV] segments\nbuffer t: i32[KV]\n", g.boolExpr(3), "")
		}
		cs := casesOf(t, fmt.Sprintf("random%d.flex", i), src)
		for _, c := range cs {
			if c.kernel.Sparsity == SparsityAnalytic {
				analytic++
			}
			blocks += countBlockSteps(c.kernel.sparsity)
		}
		cases = append(cases, cs...)
	}
	full := runProperty(t, cases, 15, 3)
	t.Logf("%d random masks, %d analytic, %d block-relation bounds, %d full tiles", len(cases), analytic, blocks, full)
	if blocks < n/20 {
		t.Errorf("only %d block relations bounded a kv range: the generator no longer exercises block-index bounds", blocks)
	}
	if analytic < n/4 || full == 0 {
		t.Errorf("random masks too rarely analysable (%d of %d analytic, %d full tiles): the generator has drifted", analytic, n, full)
	}
}

// countBlockSteps counts the kv bounds a plan takes from floor quotients
// (block indices such as kv // 64, or q // 64 in a bound on kv).
func countBlockSteps(p sparsityPlan) int {
	n := 0
	for _, d := range p.disjuncts {
		for _, s := range d.kv.innerSteps {
			if s.side.Mul > 1 || readsDiv(p.form, s.side.Num) {
				n++
			}
		}
	}
	return n
}
