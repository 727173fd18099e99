package codegen

import (
	"strings"
	"testing"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/hipsrc"
)

// TestReadBoundsIssue33 checks every read of ../testdata/reads/issue33.flex (the
// cases of issue 33) against its buffer at sizes that fit and sizes that
// do not, for whole attentions and context-parallel slices: a read that
// can fall outside is refused with its position, range and extent.
func TestReadBoundsIssue33(t *testing.T) {
	p := loadProgram(t, "../testdata/reads/issue33.flex")
	kernels := map[string]*Kernel{}
	for _, a := range p.Attentions {
		k, diags := Generate(p, a, Options{})
		if diags.HasErrors() {
			t.Fatalf("%s: %s", a.Name, diags.Render())
		}
		kernels[a.Name] = k
	}
	type slice struct{ q0, kv0, sq, skv int64 }
	tests := []struct {
		block       string
		b, h, q, kv int64
		frame       *slice
		want        string // "" fits; else a substring of the refusal
	}{
		{block: "rel_layer", b: 1, h: 1, q: 5, kv: 5},
		{block: "rel_layer", b: 1, h: 1, q: 5, kv: 4096}, // causal: only q - kv >= 0 counts
		{block: "rel_layer", b: 1, h: 1, q: 6, kv: 6, want: "issue33.flex:13:46: rel[q - kv + 3] reads rel outside its extents: index 3..8 at B=1 H=1 HKV=1 Q=6 KV=6, but rel is declared [8] = 8 there (valid 0..7)"},
		{block: "rel_layer", b: 1, h: 1, q: 4096, kv: 4096, frame: &slice{0, 0, 4, 4}},
		{block: "rel_layer", b: 1, h: 1, q: 4096, kv: 4096, frame: &slice{4, 0, 4, 4}, want: "index 4..10 at B=1 H=1 HKV=1 Q=4096 KV=4096 (rows 4..7, keys 0..3, heads 0..0)"},
		{block: "rel_layer", b: 1, h: 1, q: 4096, kv: 4096, frame: &slice{0, 8, 4, 4}}, // above the diagonal: no pair counts
		{block: "sandwich_layer", b: 1, h: 2, q: 8192, kv: 8192},
		{block: "sandwich_layer", b: 1, h: 2, q: 16384, kv: 16384, want: "sandwich[q - kv + 8191] reads sandwich outside its extents: index -8192..24574"},
		{block: "t5_layer", b: 2, h: 4, q: 100000, kv: 100000},
		{block: "t5_small_layer", b: 2, h: 4, q: 16, kv: 16, want: "t5_small[h, relative_buckets] reads t5_small outside its extents: index in dimension 1 0..31 at B=2 H=4 HKV=4 Q=16 KV=16, but t5_small is declared [H, 16] = 16 there (valid 0..15)"},
		{block: "prefix_layer", b: 4, h: 1, q: 64, kv: 64},
		{block: "prefix_layer", b: 5, h: 1, q: 64, kv: 64, want: "issue33.flex:15:34: prefix_len[b] reads prefix_len outside its extents: index 0..4"},
		{block: "index_layer", b: 1, h: 1, q: 64, kv: 64}, // value-dependent: the kernel flags it
		{block: "bool_layer", b: 1, h: 1, q: 64, kv: 64},
	}
	for _, tt := range tests {
		k := kernels[tt.block]
		env := hipsrc.BoundEnv(tt.b, tt.h, tt.h, tt.q, tt.kv, 0, 0, 0, tt.q, tt.kv, tt.h)
		if f := tt.frame; f != nil {
			env = hipsrc.BoundEnv(tt.b, tt.h, tt.h, tt.q, tt.kv, f.q0, f.kv0, 0, f.sq, f.skv, tt.h)
		}
		sizes := map[dsl.Var]int64{dsl.SizeB: tt.b, dsl.SizeH: tt.h, dsl.SizeHKV: tt.h, dsl.SizeQ: tt.q, dsl.SizeKV: tt.kv}
		var errs []string
		for _, r := range k.Reads {
			var ext []int64
			for _, b := range p.Buffers {
				if b.Decl == k.Buffers[r.Slot].Decl {
					for _, d := range b.Dims {
						ext = append(ext, d.Eval(sizes))
					}
				}
			}
			if err := hipsrc.CheckRead(r, env, ext); err != nil {
				errs = append(errs, err.Error())
			}
		}
		got := strings.Join(errs, "\n")
		if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
			t.Errorf("%s at B=%d H=%d Q=%d KV=%d frame %v:\ngot  %q\nwant %q", tt.block, tt.b, tt.h, tt.q, tt.kv, tt.frame, got, tt.want)
		}
	}
}

// TestReadLimits pins what maskc check says about reads of constant
// extents: the sizes at which each stays inside.
func TestReadLimits(t *testing.T) {
	tests := []struct{ read, mask, decl, want string }{
		{"rel[q - kv + 3]", "causal", "f32[8]", "note[W320]: rel[q - kv + 3] stays inside rel[8] for Q <= 5"},
		{"rel[q - kv + 8191]", "", "f32[16384]", "note[W320]: rel[q - kv + 8191] stays inside rel[16384] for Q <= 8193 and KV <= 8192"},
		{"rel[kv - q + 3]", "causal", "f32[8]", "note[W320]: rel[kv - q + 3] stays inside rel[8] for Q <= 4"},
		{"rel[h]", "", "f32[8]", "note[W320]: rel[h] stays inside rel[8] for H <= 8"},
		{"rel[q - kv + 9]", "causal", "f32[8]", "warning[W320]: rel[q - kv + 9] falls outside rel[8] at every size"},
		{"rel[b * H + h]", "", "f32[64]", "note[W320]: rel[b * H + h] stays inside rel[64] for B = H <= 8"},
		{"rel[(q + kv) % 8]", "", "f32[8]", ""},
		{"rel[min(q - kv, 7)]", "causal", "f32[8]", ""},
	}
	for _, tt := range tests {
		mask := ""
		if tt.mask != "" {
			mask = "    mask = " + tt.mask + "\n"
		}
		src := "buffer rel: " + tt.decl + "\nscore s(score, b, h, q, kv) = score + " + tt.read + "\nattention a {\n" + mask + "    score = s\n}\n"
		var got []string
		for _, d := range generateDiags(t, src) {
			if d.Code == CodeReadRange {
				got = append(got, d.Error())
			}
		}
		if tt.want == "" && len(got) != 0 || tt.want != "" && (len(got) != 1 || !strings.Contains(got[0], tt.want)) {
			t.Errorf("%s under %q: got %q, want %q", tt.read, tt.mask, got, tt.want)
		}
	}
}

// TestReadLimitsOnePerBuffer: reads of one buffer with the same finding
// make one diagnostic at the first of them, which counts the others; reads
// with another limit, or of another buffer, keep their own.
func TestReadLimitsOnePerBuffer(t *testing.T) {
	tests := []struct {
		score, decls string
		want         []string
	}{
		{"rel[q - kv + 3] + rel[q - kv + 2] + rel[q - kv + 1]", "buffer rel: f32[8]",
			[]string{"2:39: note[W320]: rel[q - kv + 3] stays inside rel[8] for Q <= 5", "2:57: note[W320]: rel[q - kv + 2] stays inside rel[8] for Q <= 6",
				"2:75: note[W320]: rel[q - kv + 1] stays inside rel[8] for Q <= 7"}},
		{"rel[h, 0] + rel[h, 1] + rel[h, 2] + rel[h, 3]", "buffer rel: f32[8, 4]",
			[]string{"2:39: note[W320]: rel[h, 0] and 3 more reads of rel stay inside rel[8, 4] for H <= 8"}},
		{"rel[h] * rel[h] + rel[h] + rel[h]", "buffer rel: f32[8]",
			[]string{"2:39: note[W320]: rel[h] (4 reads) stays inside rel[8] for H <= 8"}},
		{"rel[h] * rel[h] + rel[h]", "buffer rel: f32[8]",
			[]string{"2:39: note[W320]: rel[h] (3 reads) stays inside rel[8] for H <= 8"}},
		{"rel[q - kv + 3] + rel[q - kv + 3]", "buffer rel: f32[8]",
			[]string{"2:39: note[W320]: rel[q - kv + 3] (2 reads) stays inside rel[8] for Q <= 5"}},
		{"rel[h] + rel[q - kv + 3] + rel[h]", "buffer rel: f32[8]",
			[]string{"2:39: note[W320]: rel[h] (2 reads) stays inside rel[8] for H <= 8",
				"2:48: note[W320]: rel[q - kv + 3] stays inside rel[8] for Q <= 5"}},
		{"rel[q - kv + 3] + hb[q - kv + 3]", "buffer rel: f32[8]\nbuffer hb: f32[8]",
			[]string{"note[W320]: rel[q - kv + 3] stays inside rel[8]", "note[W320]: hb[q - kv + 3] stays inside hb[8]"}},
		{"rel[q - kv + 9] + rel[q - kv + 10]", "buffer rel: f32[8]",
			[]string{"warning[W320]: rel[q - kv + 9] and rel[q - kv + 10] fall outside rel[8] at every size"}},
	}
	for _, tt := range tests {
		lines := strings.Count(tt.decls, "\n")
		src := tt.decls + "\nscore s(score, b, h, q, kv) = score + " + tt.score + "\nattention a {\n    mask = causal\n    score = s\n}\n"
		var got []string
		for _, d := range generateDiags(t, src) {
			if d.Code == CodeReadRange {
				got = append(got, d.Error())
			}
		}
		ok := len(got) == len(tt.want)
		for i := 0; ok && i < len(got); i++ {
			want := tt.want[i]
			if lines > 0 {
				want = strings.TrimPrefix(want, "2:")
			}
			ok = strings.Contains(got[i], want)
		}
		if !ok {
			t.Errorf("score %s:\ngot  %q\nwant %q", tt.score, got, tt.want)
		}
	}
}

// TestReadBoundsCommonPatterns: reads that are inside by construction are
// never refused, at whole attentions and slices of them, and each pattern's
// bound is tight where it can be (one size past its limit is refused).
func TestReadBoundsCommonPatterns(t *testing.T) {
	tests := []struct {
		decl, read, mask string
	}{
		{"f32[H]", "t[h]", ""},
		{"f32[4 * H]", "t[h * 4 + kv % 4]", ""},
		{"f32[B, H]", "t[b, h]", ""},
		{"f32[H]", "t[h // 2]", ""},
		{"f32[H, Q + KV - 1]", "t[h, q - kv + KV - 1]", ""},
		{"f32[H, Q + KV - 1]", "t[h, q - kv + KV - 1]", "causal"},
		{"f32[64]", "t[(q - kv) % 64]", ""},
		{"f32[128]", "t[min(abs(q - kv), 127)]", ""},
		{"f32[129]", "t[clamp(q - kv, -64, 64) + 64]", ""},
		{"f32[KV]", "t[kv]", ""},
		{"f32[Q]", "t[q]", "causal"},
		{"f32[32]", "t[where(q - kv < 16, abs(q - kv) % 16, 16 + min(abs(q - kv) // 64, 15))]", ""},
	}
	type slice struct{ q0, kv0, sq, skv, h0, sh int64 }
	for _, tt := range tests {
		mask := ""
		if tt.mask != "" {
			mask = "    mask = " + tt.mask + "\n"
		}
		p := checkSource(t, "in.flex", "buffer t: "+tt.decl+"\nscore s(score, b, h, q, kv) = score + "+tt.read+"\nattention a {\n"+mask+"    score = s\n}\n")
		k, diags := Generate(p, p.Attentions[0], Options{})
		if diags.HasErrors() || len(k.Reads) != 1 {
			t.Fatalf("%s: %v reads, %s", tt.read, len(k.Reads), diags.Render())
		}
		for _, sz := range [][2]int64{{1, 1}, {3, 7}, {130, 130}, {4096, 4096}} {
			for _, f := range []slice{{0, 0, sz[0], sz[0], 0, 4}, {sz[0] / 2, 0, sz[0] - sz[0]/2, sz[0], 2, 2}, {0, sz[0] / 3, sz[0], sz[0] - sz[0]/3, 1, 3}} {
				if f.sq < 1 || f.skv < 1 {
					continue
				}
				env := hipsrc.BoundEnv(2, 4, 4, sz[0], sz[0], f.q0, f.kv0, f.h0, f.sq, f.skv, f.sh)
				sizes := map[dsl.Var]int64{dsl.SizeB: 2, dsl.SizeH: 4, dsl.SizeHKV: 4, dsl.SizeQ: sz[0], dsl.SizeKV: sz[0]}
				var ext []int64
				for _, d := range p.Buffers[0].Dims {
					ext = append(ext, d.Eval(sizes))
				}
				if err := hipsrc.CheckRead(k.Reads[0], env, ext); err != nil {
					t.Errorf("%s under %q at %v, slice %+v: %v", tt.read, tt.mask, sz, f, err)
				}
			}
		}
	}
}

// TestReadBoundsFactoryCalledTwice: one read as written, inlined twice with
// different arguments, is two reads; the one that falls outside refuses.
func TestReadBoundsFactoryCalledTwice(t *testing.T) {
	p := checkSource(t, "in.flex", "buffer t: bool[16]\nmask near(W)(b, h, q, kv) = t[q - kv + W]\nattention a {\n    mask = and_masks(near(2), near(9))\n}\n")
	k, diags := Generate(p, p.Attentions[0], Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Render())
	}
	if len(k.Reads) != 2 {
		t.Fatalf("%d reads, want 2: %+v", len(k.Reads), k.Reads)
	}
	refused := func(q int64) (n int) {
		for _, r := range k.Reads {
			if hipsrc.CheckRead(r, hipsrc.BoundEnv(1, 1, 1, q, 1, 0, 0, 0, q, 1, 1), []int64{16}) != nil {
				n++
			}
		}
		return n
	}
	// KV = 1: near(2) reads 2..Q+1, near(9) reads 9..Q+8.
	if got7, got8 := refused(7), refused(8); got7 != 0 || got8 != 1 {
		t.Errorf("refusals at Q = 7, 8: %d, %d; want 0, 1", got7, got8)
	}
}

// TestZeroDReadNote: a read of a 0-d buffer has no index, is never
// refused, and the language server's note says so.
func TestZeroDReadNote(t *testing.T) {
	p := checkSource(t, "in.flex", "buffer offset: i32[]\nmask m(b, h, q, kv) = kv <= q + offset\nattention a {\n    mask = m\n}\n")
	k, diags := Generate(p, p.Attentions[0], Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Render())
	}
	if len(k.Reads) != 1 || len(k.Reads[0].Index) != 0 || k.Reads[0].Text != "offset" {
		t.Fatalf("reads %+v", k.Reads)
	}
	if err := hipsrc.CheckRead(k.Reads[0], hipsrc.BoundEnv(1, 1, 1, 9, 9, 0, 0, 0, 9, 9, 1), nil); err != nil {
		t.Fatal(err)
	}
	if got := ReadNote(k.Reads[0], ConstExtents(p, k.Buffers[0].Decl)); got != "the one element of a 0-d buffer: always inside" {
		t.Fatalf("note %q", got)
	}
}
