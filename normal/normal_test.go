package normal_test

import (
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/eval"
	"github.com/maskc/maskc/internal/golden"
	"github.com/maskc/maskc/normal"
	"github.com/maskc/maskc/normal/normaltest"
	"github.com/maskc/maskc/parser"
)

var (
	propCount  = flag.Int("normal.props", 2000, "random masks TestPropertyRandom generates")
	propSeed   = flag.Int64("normal.seed", 11, "seed of TestPropertyRandom")
	spellingsH = "param W = 1024\nbuffer doc: i32[KV] segments\nbuffer prefix: i32[B]\nbuffer heads: i32[H]\nbuffer flag: bool[Q]\n"
)

// checkSrc parses and checks a .flex text.
func checkSrc(t testing.TB, name, src string) *check.Program {
	t.Helper()
	f, diags := parser.ParseFile(name, []byte(src))
	if diags.HasErrors() {
		t.Fatalf("parse %s:\n%s\n%s", name, diags.Render(), src)
	}
	p, diags := check.Check(f, check.Options{})
	if diags.HasErrors() {
		t.Fatalf("check %s:\n%s\n%s", name, diags.Render(), src)
	}
	return p
}

// canonOf is the form of the mask body.
func canonOf(t testing.TB, body string) *normal.Form {
	t.Helper()
	p := checkSrc(t, "m.flex", spellingsH+"mask m(b, h, q, kv) = "+body+"\nattention a {\n    mask = m\n}\n")
	return normal.Canon(p.Attentions[0].Mask)
}

// spellings are masks written several ways and the form all of them have.
type spellings struct {
	want      string
	spellings []string
}

// checkSpellings checks that every spelling of each class has the class's form.
func checkSpellings(t *testing.T, classes []spellings) {
	t.Helper()
	for _, c := range classes {
		for _, s := range c.spellings {
			if got := canonOf(t, s).String(); got != c.want {
				t.Errorf("Canon(%s) = %q, want %q", s, got, c.want)
			}
		}
	}
}

// TestDivModSpellings: floor quotients and remainders by constants become
// bounds where a mask bounds them directly, and extra variables with exact
// bounds otherwise; symbols free of q and kv are linear terms.
func TestDivModSpellings(t *testing.T) {
	classes := []spellings{
		{"0 <= q - kv <= 1023", []string{"(q - kv) // 1024 == 0", "(q - kv) // (W) == 0", "(q - kv) % 1024 == q - kv",
			"q >= kv and (q - kv) // 1024 < 1", "(kv - q) // -1024 == 0", "(2 * q - 2 * kv) // 2048 == 0"}},
		{"-4 <= q - kv <= 4", []string{"(q - kv + 4) // 9 == 0", "abs(q - kv) // 5 == 0", "abs(q - kv) // 5 < 1"}},
		{"q - kv >= 0", []string{"(q - kv) // 7 >= 0", "(q - kv) // 1 >= 0", "(3 * q - 3 * kv) // 3 >= 0"}},
		{"True", []string{"q % 4 >= 0", "(q - kv) % 8 < 8", "q // 4 >= 0", "(q + kv) % 3 <= 2"}},
		{"False", []string{"q % 4 == 4", "(q - kv) % 8 < 0", "q // 4 < 0"}},
		{"(q - kv) % 2 == 0", []string{"(q - kv) % 2 == 0", "(q - kv) % 2 != 1", "not ((q - kv) % 2 == 1)"}},
		{"q // 64 - kv // 64 == 0", []string{"q // 64 == kv // 64", "kv // 64 == q // 64", "(q - 0) // 64 == (kv + 0) // 64"}},
		{"q // 4 - kv // 4 >= 0", []string{"kv // 4 <= q // 4", "q // 4 >= kv // 4", "not (kv // 4 > q // 4)"}},
		{"kv < prefix[b] or q - kv >= 0", []string{"kv < prefix[b] or q >= kv", "prefix[b] > kv or kv <= q"}},
		{"1024*h - q + kv >= 0", []string{"q - kv <= W * h", "q - kv <= h * 1024"}},
		{"q - kv >= 0 and q - kv <= heads[h]", []string{"0 <= q - kv <= heads[h]", "kv >= q - heads[h] and q >= kv"}},
		{"kv - prefix[b] // 2 == 3", []string{"kv - 3 == prefix[b] // 2", "kv - prefix[b] // 2 == 3"}},
	}
	checkSpellings(t, classes)
}

// TestBoolAsInt: a bool compared with an int is its value 0 or 1 compared
// (torch's promotion, as BD3-LM's `x0_flag_q == 1`), so the comparison is
// the bool's own bounds or their negation, not an atom evaluated per pair.
func TestBoolAsInt(t *testing.T) {
	classes := []spellings{
		{"q >= 64 and q - kv >= 0", []string{"(q >= 64) == 1 and q >= kv", "(q >= 64) != 0 and q >= kv", "1 == (q >= 64) and q >= kv",
			"(q < 64) == 0 and q >= kv", "(q >= 64) > 0 and q >= kv", "(q >= 64) >= 1 and (q >= kv) == True"}},
		{"kv >= 64 or q <= 63", []string{"(q >= 64) == 0 or kv >= 64", "(q >= 64) < 1 or (kv >= 64) == 1"}},
		{"False", []string{"(q >= kv) == 2", "(q >= kv) < 0", "-1 == (kv >= 4096)"}},
		{"True", []string{"(q >= kv) <= 1", "(q >= kv) != 2"}},
	}
	checkSpellings(t, classes)
}

// TestExtras: the extra variables a form keeps, with the index variables
// they read.
func TestExtras(t *testing.T) {
	f := canonOf(t, "q // 64 == kv // 64 and kv < prefix[b]")
	var got []string
	for _, x := range f.Extras {
		got = append(got, fmt.Sprintf("%s %v", x.Text, x.Vars))
	}
	want := "q // 64 [q]; kv // 64 [kv]; prefix[b] [b]"
	if strings.Join(got, "; ") != want {
		t.Errorf("extras %q, want %q", strings.Join(got, "; "), want)
	}
	if !f.Depends(dsl.VarB) || f.Depends(dsl.VarH) {
		t.Errorf("Depends(b) = %v, Depends(h) = %v", f.Depends(dsl.VarB), f.Depends(dsl.VarH))
	}
	// Unused quotients are dropped: the bound on q // 8 became one on q.
	if f := canonOf(t, "q // 8 == 2"); len(f.Extras) != 0 || f.String() != "16 <= q <= 23" {
		t.Errorf("q // 8 == 2: %s with %d extras", f, len(f.Extras))
	}
}

// TestPropertyRandom: the normal form of random masks (patterns, floor
// divisions, remainders, symbols, and/or/not/where nesting) agrees with
// the reference evaluator at every point of small shapes (the form
// evaluated by normaltest.FormEval), and each term's Form.Interval on q
// and kv is sound, and exact where it says so, at the same points.
func TestPropertyRandom(t *testing.T) {
	total := *propCount
	if testing.Short() {
		total = 200
	}
	g := &normaltest.Gen{Rng: rand.New(rand.NewSource(*propSeed)), DivMod: true, BoolInt: true}
	const perFile = 40
	shapes := [][2]int64{{1, 1}, {3, 5}, {5, 3}, {7, 7}, {9, 13}, {17, 17}}
	var checked, extras, complex, bad int
	var intervals intervalStats
	for file := 0; file*perFile < total; file++ {
		var src strings.Builder
		src.WriteString(normaltest.Header)
		for i := 0; i < perFile; i++ {
			fmt.Fprintf(&src, "mask m%d(b, h, q, kv) = %s\n", i, g.BoolExpr(g.Rng.Intn(3)))
			fmt.Fprintf(&src, "attention a%d {\n    mask = m%d\n}\n", i, i)
		}
		p := checkSrc(t, fmt.Sprintf("random%d.flex", file), src.String())
		forms := make([]*normal.Form, len(p.Attentions))
		for i, a := range p.Attentions {
			forms[i] = normal.Canon(a.Mask)
			if forms[i].TooComplex {
				complex++
			}
			if len(forms[i].Extras) > 0 {
				extras++
			}
		}
		for _, s := range shapes {
			e := &eval.Env{B: 2, H: 2, HKV: 2, Q: s[0], KV: s[1]}
			normaltest.FillBuffers(p, e, g.Rng, 3)
			for i, a := range p.Attentions {
				f := forms[i]
				if f.TooComplex {
					continue
				}
				fn, err := eval.Compile(a.Mask)
				if err != nil {
					t.Fatal(err)
				}
				mask, err := fn.Bind(e)
				if err != nil {
					t.Fatal(err)
				}
				fe := normaltest.NewFormEval(t, f, a.Mask, e)
				for b := int64(0); b < e.B; b++ {
					for h := int64(0); h < e.H; h++ {
						for q := int64(0); q < e.Q; q++ {
							for kv := int64(0); kv < e.KV; kv++ {
								want, err := mask.Mask(b, h, q, kv)
								if err != nil {
									continue
								}
								got, ok := fe.At(e, b, h, q, kv)
								if !ok {
									continue
								}
								checked++
								if xs, ok := fe.Extras(e, b, h, q, kv); ok {
									p := normal.Point{b, h, q, kv, 0, e.B, e.H, e.HKV, e.Q, e.KV}
									for _, term := range f.Terms {
										for _, v := range []dsl.Var{dsl.VarQ, dsl.VarKV} {
											if msg := checkInterval(f, term, v, p, xs, &intervals); msg != "" {
												bad++
												if bad <= 5 {
													t.Errorf("%s: term %s at Q=%d KV=%d (b=%d h=%d q=%d kv=%d)", msg, term, e.Q, e.KV, b, h, q, kv)
												}
											}
										}
									}
								}
								if got != want {
									bad++
									if bad <= 5 {
										t.Errorf("form %s = %v, evaluator %v at Q=%d KV=%d (b=%d h=%d q=%d kv=%d)\nmask: %s",
											f, got, want, e.Q, e.KV, b, h, q, kv, a.Mask.Name)
									}
								}
							}
						}
					}
				}
			}
		}
		if bad > 0 {
			t.Fatalf("%d disagreements in file %d:\n%s", bad, file, src.String())
		}
	}
	t.Logf("%d masks, %d with extra variables, %d too complex, %d points compared", total, extras, complex, checked)
	t.Logf("intervals: %d exact hits, %d loose, %d block sides", intervals.exactHits, intervals.looseTerms, intervals.block)
	if intervals.block == 0 || intervals.exactHits == 0 {
		t.Errorf("no exact or block interval was checked: %d, %d", intervals.exactHits, intervals.block)
	}
	if extras < total/4 {
		t.Errorf("only %d of %d random masks kept an extra variable: the generator is not reaching // and %%", extras, total)
	}
}

// intervalStats counts what checkInterval compared.
type intervalStats struct {
	exactHits, looseTerms, block int
	memo                         map[*normal.Term][2]normal.Interval
}

// checkInterval checks Form.Interval for one term and variable at one
// point: a point satisfying the term's bounds has v in the interval, and
// with Exact, a point satisfying the Rest bounds with v in the interval
// satisfies every bound. It returns a description of a failure, or "".
func checkInterval(f *normal.Form, t *normal.Term, v dsl.Var, p normal.Point, xs []int64, st *intervalStats) string {
	if st.memo == nil {
		st.memo = map[*normal.Term][2]normal.Interval{}
	}
	ivs, ok := st.memo[t]
	if !ok {
		ivs = [2]normal.Interval{f.Interval(t, dsl.VarQ), f.Interval(t, dsl.VarKV)}
		st.memo[t] = ivs
	}
	iv := ivs[0]
	if v == dsl.VarKV {
		iv = ivs[1]
	}
	holds := func(bs []normal.Bound) bool {
		for _, b := range bs {
			if !b.Contains(normal.Value(b.Dir, p, xs)) {
				return false
			}
		}
		return true
	}
	in := true
	for _, s := range iv.Lo {
		in = in && p[v] >= s.Eval(p, xs, false)
		if s.Mul > 1 {
			st.block++
		}
	}
	for _, s := range iv.Hi {
		in = in && p[v] <= s.Eval(p, xs, true)
	}
	all := holds(t.Bounds)
	switch {
	case all && !in:
		return fmt.Sprintf("%s is outside the interval of %s though the bounds hold", v, t)
	case all && !holds(iv.Rest):
		return "Rest fails though the bounds hold"
	case iv.Exact && in && holds(iv.Rest) && !all:
		return fmt.Sprintf("exact interval on %s holds but a bound fails", v)
	}
	if iv.Exact && in && all {
		st.exactHits++
	}
	if !iv.Exact {
		st.looseTerms++
	}
	return ""
}

// TestIntervalBlocks: block-diagonal and block-causal masks give exact
// kv intervals in closed form.
func TestIntervalBlocks(t *testing.T) {
	f := canonOf(t, "q // 64 == kv // 64")
	iv := f.Interval(f.Terms[0], dsl.VarKV)
	if !iv.Exact || len(iv.Lo) != 1 || len(iv.Hi) != 1 || iv.Lo[0].Mul != 64 {
		t.Fatalf("%s: %+v", f, iv)
	}
	for _, q := range []int64{0, 63, 64, 200} {
		p := normal.Point{2: q}
		x := []int64{q / 64, 0}
		lo, hi := iv.Lo[0].Eval(p, x, false), iv.Hi[0].Eval(p, x, true)
		if lo != q/64*64 || hi != q/64*64+63 {
			t.Errorf("q=%d: kv in [%d, %d], want [%d, %d]", q, lo, hi, q/64*64, q/64*64+63)
		}
	}
	f = canonOf(t, "q >= kv and (q - kv) % 2 == 0")
	if iv := f.Interval(f.Terms[0], dsl.VarKV); iv.Exact || len(iv.Loose) != 1 || len(iv.Hi) != 1 {
		t.Errorf("%s: %+v, want the remainder loose and kv <= q", f, iv)
	}
}

// TestMonotone pins which directions move one way as q or kv grows: the
// full-tile test of codegen checks their bounds at a tile's corners.
func TestMonotone(t *testing.T) {
	for _, tc := range []struct {
		mask string
		ok   bool
		// opposite: q and kv move the direction opposite ways; qFixed: q
		// does not move it at all.
		opposite, qFixed bool
	}{
		{"q - kv >= 0", true, true, false},
		{"kv // 64 <= q // 64", true, true, false},
		{"(q - kv) // 4 >= h", true, true, false},
		{"kv < prefix[b]", true, false, true},
		{"(q - kv) % 2 == 0", false, false, false},
		{"q % 8 < 4", false, false, false},
	} {
		f := canonOf(t, tc.mask)
		if len(f.Terms) != 1 || len(f.Terms[0].Bounds) != 1 {
			t.Fatalf("%s: %s, want one bound", tc.mask, f)
		}
		d := f.Terms[0].Bounds[0].Dir
		q, qOK := f.Monotone(d, dsl.VarQ)
		kv, kvOK := f.Monotone(d, dsl.VarKV)
		ok := qOK && kvOK
		if ok != tc.ok || ok && (tc.opposite != (q*kv == -1) || tc.qFixed != (q == 0 && kv != 0)) {
			t.Errorf("%s (%s): q %d %v, kv %d %v", tc.mask, f, q, qOK, kv, kvOK)
		}
	}
}

// TestRemainder reads remainder bounds back as bounds on n % d.
func TestRemainder(t *testing.T) {
	for _, tc := range []struct {
		mask, want string
		ok         bool
	}{
		{"h % 2 == 0", "h % 2: 0..0", true},
		{"(q - kv) % 4 >= 2", "q - kv % 4: 2..3", true},
		{"h % 8 <= 5", "h % 8: 0..5", true},
		{"q - kv >= 0", "", false},
	} {
		f := canonOf(t, tc.mask)
		if len(f.Terms) != 1 || len(f.Terms[0].Bounds) != 1 {
			t.Fatalf("%s: %s, want one bound", tc.mask, f)
		}
		num, den, r, ok := f.Terms[0].Bounds[0].Remainder()
		if ok != tc.ok {
			t.Errorf("%s: Remainder ok = %v", tc.mask, ok)
			continue
		}
		if !ok {
			continue
		}
		lo, hi := r.Lo, r.Hi
		if !r.HasLo {
			lo = 0
		}
		if !r.HasHi {
			hi = den - 1
		}
		if got := fmt.Sprintf("%s %% %d: %d..%d", num.Format(nil), den, lo, hi); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.mask, got, tc.want)
		}
	}
}

// TestExamplesGolden pins the normal form of every attention block of every
// example (testdata/examples.golden) and of every GPU benchmark mask
// (testdata/bench.golden); -update rewrites them.
func TestExamplesGolden(t *testing.T) {
	for _, tc := range []struct {
		golden string
		globs  []string
	}{
		{"examples.golden", []string{"../examples/*.flex"}},
		{"bench.golden", []string{"../gpu/bench_cases/*.flex", "../gpu/bench_cases_ext/*.flex", "../gpu/bwd_cases/*.flex"}},
	} {
		var files []string
		for _, g := range tc.globs {
			m, err := filepath.Glob(filepath.FromSlash(g))
			if err != nil || len(m) == 0 {
				t.Fatalf("no files match %s: %v", g, err)
			}
			files = append(files, m...)
		}
		var out strings.Builder
		for _, path := range files {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			p := checkSrc(t, filepath.Base(path), string(src))
			name := filepath.Base(path)
			if tc.golden != "examples.golden" {
				name = filepath.ToSlash(strings.TrimPrefix(path, ".."+string(filepath.Separator)))
			}
			fmt.Fprintf(&out, "# %s\n", name)
			for _, a := range p.Attentions {
				f := normal.Canon(a.Mask)
				fmt.Fprintf(&out, "%s: %s\n", a.Name, f)
				for i, x := range f.Extras {
					kind := "quotient"
					if x.Kind == normal.ExtraSymbol {
						kind = "symbol"
					}
					fmt.Fprintf(&out, "    x%d = %s (%s of %v)\n", i, x.Text, kind, x.Vars)
				}
				for _, term := range f.Terms {
					for _, at := range term.Atoms {
						if at.Kind == normal.AtomOpaque {
							fmt.Fprintf(&out, "    opaque %s: %s\n", at.Text, at.Why)
						}
					}
				}
			}
			out.WriteString("\n")
		}
		golden.CheckString(t, filepath.Join("testdata", tc.golden), out.String())
	}
}
