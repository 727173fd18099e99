package check

import (
	"os"
	"testing"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/parser"
)

// FuzzCheck feeds arbitrary text through the parser and the checker, then
// lowers every attention's mask and score and every mod again through the
// public API. Nothing may panic, and every lowered form must keep the
// invariants of dsl.Lowered.
func FuzzCheck(f *testing.F) {
	for _, path := range exampleFiles(f) {
		text, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(text))
	}
	if text, err := os.ReadFile("testdata/lower.flex"); err == nil {
		f.Add(string(text))
	}
	for _, name := range []string{"t5_buckets", "natten", "casts", "logical_methods", "trunc_div", "clamp_kwargs"} {
		if text, err := os.ReadFile("../testdata/ported/" + name + ".flex"); err == nil {
			f.Add(string(text))
		}
	}
	for _, tc := range diagnosticCases {
		if len(tc.src) < 4096 {
			f.Add(tc.src)
		}
	}
	f.Fuzz(func(t *testing.T, src string) {
		file, diags := parser.ParseFile("fuzz.flex", []byte(src))
		if file == nil || diags.HasErrors() {
			return
		}
		p, _ := Check(file, Options{Defines: map[string]string{"W": "3", "CAP": "2.5"}})
		if p == nil {
			t.Fatal("Check returned a nil Program")
		}
		for _, a := range p.Attentions {
			for _, key := range []string{"mask", "score"} {
				s := a.Setting(key)
				if s == nil || s.Value == nil {
					continue
				}
				low, ld := p.Lower(s.Value)
				if low == nil && !ld.HasErrors() {
					t.Fatalf("Lower(%s of %s) gave neither a result nor an error", key, a.Name)
				}
				if low != nil {
					if bad := loweredInvariants(p, low); len(bad) > 0 {
						t.Fatalf("attention %s %s: %v", a.Name, key, bad)
					}
				}
			}
		}
		for _, m := range p.Mods {
			if low, _ := p.LowerMod(m.Name); low != nil {
				if bad := loweredInvariants(p, low); len(bad) > 0 {
					t.Fatalf("mod %s: %v", m.Name, bad)
				}
			}
		}
	})
}

// fuzzPrelude declares one of everything a fuzzed body can name.
const fuzzPrelude = `param W = 16
param CAP = 30.0
param ON = True
buffer doc: i32[KV] segments
buffer slopes: f32[H]
buffer tb: f32[H, Q + KV - 1]
mask near(b, h, q, kv) = q - kv <= W
mask win(N)(b, h, q, kv) = q >= kv and q - kv < N
score cap(score, b, h, q, kv) = CAP * tanh(score / CAP)
`

// FuzzCheckBody fuzzes one mask body and one score body inside a file that
// declares params, buffers and mods, so that most inputs reach the checker
// rather than stopping at the parser.
func FuzzCheckBody(f *testing.F) {
	for _, seed := range [][2]string{
		{"q >= kv", "score"},
		{"doc[q] == doc[kv] and near(b, h, q, kv)", "score + slopes[h] * (kv - q)"},
		{"0 <= q - kv <= W // 2 | ON", "where(q >= kv, cap(score, b, h, q, kv), -inf)"},
		{"win(W * 2)(b, h, kv, q) if ON else abs(q - kv) % 2 == 0", "score + tb[h, q - kv + KV - 1] ** 2"},
		{"not (q & 3 == 1) or min(q, kv) > clamp(h, 0, 4)", "score / (1 - 1)"},
		{"and_masks(near, win(3))(b, h, q, kv)", "floor(score) // 2.0 + 2 ** -3"},
		{"torch.logical_and(q.ge(kv), (q - kv).abs() <= 3)", "score + (score * 2.0).long() + torch.div(q, 3, rounding_mode=\"trunc\")"},
		{"q.clamp(min=1).to(torch.int32) > kv.float()", "torch.where(q >= kv, score, float(\"-inf\")) + math.inf * 0"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, mask, score string) {
		src := fuzzPrelude + "mask fm(b, h, q, kv) = " + mask + "\nscore fs(score, b, h, q, kv) = " + score +
			"\nattention fa {\n    mask = and_masks(fm, win(W))\n    score = fs\n}\n"
		file, diags := parser.ParseFile("fuzz.flex", []byte(src))
		if file == nil || diags.HasErrors() {
			return
		}
		p, diags := Check(file, Options{})
		a := p.Attention("fa")
		if a == nil {
			t.Fatal("attention fa is missing")
		}
		for _, low := range []*dsl.Lowered{a.Mask, a.Score} {
			if low != nil {
				if bad := loweredInvariants(p, low); len(bad) > 0 {
					t.Fatalf("%v\n%s", bad, src)
				}
			}
		}
		if (a.Mask == nil || a.Score == nil) && !diags.HasErrors() {
			t.Fatalf("a setting failed to lower without an error:\n%s", src)
		}
		for _, d := range diags {
			if d.Source == nil || !d.Span.IsValid() || d.Span.End > len(src) {
				t.Fatalf("diagnostic without a valid position: %s", d.Error())
			}
		}
	})
}
