package classify

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/parser"
)

const canonHeader = `param W = 1024
buffer doc: i32[KV] segments
buffer ids: i32[KV]
buffer flag: bool[Q]
`

// canonOf checks a file whose only mask mod is m = body and returns the
// canonical form of its lowered body.
func canonOf(t testing.TB, body string) *Form {
	t.Helper()
	src := canonHeader + "mask m(b, h, q, kv) = " + body + "\nattention a {\n    mask = m\n}\n"
	f, diags := parser.ParseFile("canon.flex", []byte(src))
	if diags.HasErrors() {
		t.Fatalf("%s", diags.Render())
	}
	p, diags := check.Check(f, check.Options{})
	if diags.HasErrors() {
		t.Fatalf("%s", diags.Render())
	}
	return Canon(p.Attentions[0].Mask)
}

// TestCanonSpellings: equivalent spellings reach the same canonical form.
func TestCanonSpellings(t *testing.T) {
	classes := []struct {
		want      string
		spellings []string
	}{
		{"q - kv >= 0", []string{"q >= kv", "kv <= q", "not (kv > q)", "q - kv >= 0", "~(q < kv)",
			"where(q >= kv, True, False)", "True if q >= kv else False", "kv - q < 1", "2 * q >= 2 * kv",
			"max(q, kv) == q", "not (not (q >= kv))", "(q >= kv) == True", "q >= kv or q >= kv + 5"}},
		{"0 <= q - kv <= 1023", []string{"q >= kv and q - kv < 1024", "0 <= q - kv <= W - 1", "0 <= q - kv < W",
			"q - kv < 1024 and kv <= q", "(q >= kv) & (q - kv <= 1023)", "q >= kv and not (q - kv >= 1024)",
			"clamp(q - kv, 0, 2000) == q - kv and q - kv <= 1023"}},
		{"-3 <= q - kv <= 5", []string{"-3 <= q - kv <= 5", "abs(q - kv - 1) <= 4", "kv - q <= 3 and q - kv <= 5",
			"(q - kv <= 5 and q >= kv) or (kv - q <= 3 and kv > q)"}},
		{"doc[q] == doc[kv] and q - kv >= 0", []string{"doc[q] == doc[kv] and q >= kv", "doc[kv] == doc[q] and kv <= q",
			"not (doc[q] != doc[kv] or q < kv)"}},
		{"True", []string{"True", "q >= kv or q < kv", "q < Q", "kv <= KV - 1", "q >= 0 and kv >= 0", "abs(q - kv) >= 0",
			"doc[q] == doc[kv] or doc[q] != doc[kv]"}},
		{"False", []string{"False", "q > kv and kv > q", "q < 0", "kv >= KV", "q - kv == 3 and q - kv == 4",
			"doc[q] == doc[kv] and doc[q] != doc[kv]", "2 * q == 2 * kv + 1"}},
		{"kv <= 99 or q - kv >= 0", []string{"kv < 100 or q >= kv", "not (kv >= 100 and q < kv)", "q >= kv or 100 > kv"}},
		{"q - kv == 0", []string{"q == kv", "q - kv == 0", "not (q != kv)", "q >= kv and kv >= q"}},
		{"q - kv - Q + KV >= 0", []string{"kv <= q + KV - Q", "q - kv >= Q - KV"}},
	}
	for _, c := range classes {
		for _, s := range c.spellings {
			if got := canonOf(t, s).String(); got != c.want {
				t.Errorf("Canon(%s) = %q, want %q", s, got, c.want)
			}
		}
	}
}

// TestDistanceRange: the hull of q - kv over all terms, for tile skipping.
func TestDistanceRange(t *testing.T) {
	cases := []struct{ body, want string }{
		{"q >= kv", "q - kv >= 0"},
		{"0 <= q - kv <= 7", "0 <= q - kv <= 7"},
		{"(0 <= q - kv <= 3) or (10 <= q - kv <= 12)", "0 <= q - kv <= 12"},
		{"kv < 5 or q >= kv", "True"},
		{"doc[q] == doc[kv] and abs(q - kv) <= 2", "-2 <= q - kv <= 2"},
		{"q > kv and kv > q", "1 <= q - kv <= 0"},
	}
	for _, c := range cases {
		b, ok := canonOf(t, c.body).DistanceRange()
		if got := b.Format("q - kv"); !ok || got != c.want {
			t.Errorf("DistanceRange(%s) = %s, %v; want %s", c.body, got, ok, c.want)
		}
	}
}

// TestCanonOpaque: what the form cannot look into stays an atom with a
// reason, and dependence on b and h is recorded.
func TestCanonOpaque(t *testing.T) {
	cases := []struct {
		body, want, why string
		dependsH        bool
	}{
		{"(q - kv) % (kv + 1) == 0", "(q - kv) % (kv + 1) == 0", "uses %", false},
		{"q * kv <= 12", "q * kv <= 12", "multiplies by a variable", false},
		{"flag[q]", "flag[q]", "reads buffer flag", false},
		{"ids[q] == ids[kv] and h == 1", "", "", true},
		{"q // (kv + 1) == 2", "q // (kv + 1) == 2", "uses //", false},
	}
	for _, c := range cases {
		f := canonOf(t, c.body)
		if f.Depends(dsl.VarH) != c.dependsH {
			t.Errorf("Canon(%s).Depends(h) = %v", c.body, !c.dependsH)
		}
		if c.want == "" {
			continue
		}
		if len(f.Terms) != 1 || len(f.Terms[0].Atoms) != 1 {
			t.Fatalf("Canon(%s) = %s, want one atom", c.body, f)
		}
		a := f.Terms[0].Atoms[0]
		if a.Kind != AtomOpaque || a.Text != c.want || a.Why != c.why {
			t.Errorf("Canon(%s) atom = %v %q %q, want opaque %q %q", c.body, a.Kind, a.Text, a.Why, c.want, c.why)
		}
	}
}

// TestCanonTooComplex: a mask whose normal form explodes is marked, not
// expanded without bound, and classifies as generated.
func TestCanonTooComplex(t *testing.T) {
	var parts []string
	for i := 0; i < 10; i++ {
		parts = append(parts, fmt.Sprintf("(q * kv == %d or ids[q] == %d)", i, i))
	}
	f := canonOf(t, strings.Join(parts, " and "))
	if !f.TooComplex || f.String() != "<too complex>" {
		t.Fatalf("got %s", f)
	}
	if m := matchMask(f); m.pattern != "" || !strings.Contains(m.reason, "too complex") {
		t.Fatalf("matchMask = %+v", m)
	}
}

// TestCanonOverflow: int64 overflow while normalising falls back to an
// opaque atom instead of a wrong bound.
func TestCanonOverflow(t *testing.T) {
	f := canonOf(t, "q * 4611686018427387904 - kv * 4611686018427387904 >= 4611686018427387904")
	if f.TooComplex || len(f.Terms) != 1 {
		t.Fatalf("got %s", f)
	}
	f = canonOf(t, "(q - kv) * 9223372036854775807 >= 1")
	if f.String() != "q - kv >= 1" && len(f.Terms[0].Atoms) != 1 {
		t.Fatalf("got %s", f)
	}
}

// FuzzClassify feeds arbitrary mask bodies through parse, check and
// Classify: never a panic, and when the body checks, its canonical form
// agrees with the evaluator on small shapes.
func FuzzClassify(f *testing.F) {
	for _, s := range []string{"q >= kv", "abs(q - kv) <= 3 and (q - kv) % 2 == 0", "doc[q] == doc[kv] and q >= kv",
		"kv < 3 or q >= kv", "min(q, kv) == max(q, kv) - 1", "where(h == 0, q >= kv, q <= kv)", "clamp(q, 1, 3) == kv"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		if strings.ContainsAny(body, "\n{}") || len(body) > 300 {
			return
		}
		src := canonHeader + "mask m(b, h, q, kv) = " + body + "\nattention a {\n    mask = m\n}\n"
		file, diags := parser.ParseFile("fuzz.flex", []byte(src))
		if diags.HasErrors() {
			return
		}
		p, diags := check.Check(file, check.Options{})
		if diags.HasErrors() || len(p.Attentions) != 1 || p.Attentions[0].Mask == nil {
			return
		}
		plan, cdiags := Classify(p, Options{})
		o := &oracle{t: t, prog: p, plan: plan, diags: cdiags, rng: rand.New(rand.NewSource(3)), maxRun: 3,
			checked: map[string]int{}, maxBad: 3}
		for _, s := range [][2]int64{{1, 1}, {3, 5}, {5, 3}, {6, 6}} {
			o.verifyShape(1, 2, s[0], s[1])
		}
	})
}
