package codegen

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// frameMain checks hipsrc/frame.h on the host for every case (FNS lists,
// per case, the local functions and their maskc_g_ twins): for slices of a
// global attention of QG x KVG positions and HG heads (a doc-id buffer and
// a per-head table, both global, in the slots the case reads them from),
// each given by its offsets and local sizes,
//
//   - the local mask and score at (h, q, kv) equal the global ones at
//     (h + h_offset, q + q_offset, kv + kv_offset) with the global sizes;
//   - maskc_kv_range of a local q tile lies in [0, Skv), holds every local
//     kv that the global mask keeps, and is the global range shifted and
//     clamped to the slice; maskc_q_range likewise for a local kv tile;
//   - maskc_tile_full is true only when every local pair is kept;
//   - maskc_kv_tile_meets (block-selection masks only: null elsewhere) of a
//     local tile is the global one of the tile shifted, and true wherever
//     the tile holds a kept pair;
//   - with the frame all zero, every local function is its twin.
//
// It prints one line per disagreement and then "checked N".
const frameMain = `
typedef bool (*mask_fn)(const MaskcBuffers&, long long, long long, long long, long long, long long, long long, long long, long long, long long);
typedef float (*score_fn)(const MaskcBuffers&, long long, long long, long long, long long, long long, float, long long, long long, long long, long long);
typedef void (*range_fn)(const MaskcBuffers&, long long, long long, long long, long long, long long, long long, long long, long long, long long, long long*, long long*);
typedef bool (*full_fn)(const MaskcBuffers&, long long, long long, long long, long long, long long, long long, long long, long long, long long, long long, long long);
struct Fns { mask_fn mask, gmask; score_fn score, gscore; range_fn kv, gkv, q, gq; full_fn full; int doc_slot, slope_slot; full_fn meets; };
static const Fns fns[] = { FNS };

static const long long QG = 300, KVG = 300, HG = 8, HKVG = 4, BT = 17;  // global sizes, tile
static int doc[KVG];
static float slope[HG];

static void clamp_shift(long long* lo, long long* hi, long long off, long long n) {
  long long l = *lo - off, u = *hi - off;
  if (l < 0) l = 0;
  if (u > n) u = n;
  if (l >= u) l = u = 0;
  *lo = l, *hi = u;
}

int main() {
  unsigned seed = 12345;
  int d = 0;
  for (long long i = 0; i < KVG; ++i) {  // documents of random lengths
    seed = seed * 1103515245u + 12345u;
    if ((seed >> 16) % 23 == 0) ++d;
    doc[i] = d;
  }
  for (int h = 0; h < HG; ++h) slope[h] = 0.0625f * (h + 1);
  // slices: q_offset Sq kv_offset Skv h_offset H, and whether totals are passed
  const long long slices[][7] = {
      {0, QG, 0, KVG, 0, HG, 0},  {0, 150, 150, 150, 0, HG, 1}, {150, 150, 0, 150, 2, 4, 1},
      {75, 75, 225, 75, 4, 2, 1}, {225, 75, 75, 75, 6, 2, 1},  {100, 200, 0, 300, 0, HG, 0},
      {0, 75, 0, 75, 0, HG, 0},   {37, 61, 205, 95, 2, 6, 1},
  };
  long long checked = 0;
  for (int c = 0; c < (int)(sizeof fns / sizeof fns[0]); ++c) {
    const Fns& f = fns[c];
    for (const auto& s : slices) {
      MaskcBuffers buf;
      memset(&buf, 0, sizeof buf);
      if (f.doc_slot >= 0) buf.ptr[f.doc_slot] = doc, buf.dim[f.doc_slot][0] = KVG, buf.dim[f.doc_slot][1] = 1;
      if (f.slope_slot >= 0) buf.ptr[f.slope_slot] = slope, buf.dim[f.slope_slot][0] = HG, buf.dim[f.slope_slot][1] = 1;
      unsigned status[MASKC_STATUS_WORDS] = {0};  // doc is sorted: what maskc_seg_check writes for it
      if (f.doc_slot >= 0) status[1 + f.doc_slot] = 1;
      buf.status = status;
      MaskcBuffers gbuf = buf;
      buf.q_offset = s[0], buf.kv_offset = s[2], buf.h_offset = s[4];
      if (s[6]) buf.q_total = QG, buf.kv_total = KVG, buf.h_total = HG;
      const long long Sq = s[1], Skv = s[3], H = s[5], HKV = H / 2;
      // without totals the frame's sizes are offset + local: the whole attention only when the slice ends it
      const long long Qg = s[6] ? QG : s[0] + Sq, KVg = s[6] ? KVG : s[2] + Skv, Hg = s[6] ? HG : s[4] + H;
      const long long HKVg = Hg / 2;
      for (long long h = 0; h < H; ++h) {
        for (long long q = 0; q < Sq; ++q)
          for (long long kv = 0; kv < Skv; ++kv) {
            ++checked;
            const bool m = f.mask(buf, 1, H, HKV, Sq, Skv, 0, h, q, kv);
            const bool gm = f.gmask(gbuf, 1, Hg, HKVg, Qg, KVg, 0, h + s[4], q + s[0], kv + s[2]);
            if (m != gm) printf("case %d slice %lld,%lld: mask(h=%lld q=%lld kv=%lld) = %d, global %d\n", c, s[0], s[2], h, q, kv, m, gm);
            const float sc = f.score(buf, 1, H, HKV, Sq, Skv, 0.5f, 0, h, q, kv);
            const float gs = f.gscore(gbuf, 1, Hg, HKVg, Qg, KVg, 0.5f, 0, h + s[4], q + s[0], kv + s[2]);
            if (memcmp(&sc, &gs, sizeof sc) != 0) printf("case %d: score(h=%lld q=%lld kv=%lld) = %g, global %g\n", c, h, q, kv, sc, gs);
          }
        for (long long t0 = 0; t0 < Sq; t0 += BT) {  // q tiles
          const long long t1 = t0 + BT < Sq ? t0 + BT : Sq;
          long long lo, hi, glo, ghi;
          f.kv(buf, 1, H, HKV, Sq, Skv, 0, h, t0, t1, &lo, &hi);
          f.gkv(gbuf, 1, Hg, HKVg, Qg, KVg, 0, h + s[4], t0 + s[0], t1 + s[0], &glo, &ghi);
          clamp_shift(&glo, &ghi, s[2], Skv);
          if (lo != glo || hi != ghi) printf("case %d: kv_range(h=%lld, q %lld..%lld) = [%lld, %lld), global clamped [%lld, %lld)\n", c, h, t0, t1, lo, hi, glo, ghi);
          for (long long q = t0; q < t1; ++q)
            for (long long kv = 0; kv < Skv; ++kv)
              if ((kv < lo || kv >= hi) && f.mask(buf, 1, H, HKV, Sq, Skv, 0, h, q, kv))
                printf("case %d: (h=%lld q=%lld kv=%lld) kept outside kv_range [%lld, %lld)\n", c, h, q, kv, lo, hi);
          for (long long k0 = 0; k0 < Skv; k0 += BT) {
            const long long k1 = k0 + BT < Skv ? k0 + BT : Skv;
            const bool meets = !f.meets || f.meets(buf, 1, H, HKV, Sq, Skv, 0, h, t0, t1, k0, k1);
            const bool gmeets = !f.meets || f.meets(gbuf, 1, Hg, HKVg, Qg, KVg, 0, h + s[4], t0 + s[0], t1 + s[0], k0 + s[2], k1 + s[2]);
            if (meets != gmeets) printf("case %d: kv_tile_meets(h=%lld, q %lld.. kv %lld..) = %d, global %d\n", c, h, t0, k0, meets, gmeets);
            for (long long q = t0; q < t1 && !meets; ++q)
              for (long long kv = k0; kv < k1; ++kv)
                if (f.mask(buf, 1, H, HKV, Sq, Skv, 0, h, q, kv))
                  printf("case %d: (h=%lld q=%lld kv=%lld) kept in a tile kv_tile_meets misses\n", c, h, q, kv);
            if (!f.full(buf, 1, H, HKV, Sq, Skv, 0, h, t0, t1, k0, k1)) continue;
            for (long long q = t0; q < t1; ++q)
              for (long long kv = k0; kv < k1; ++kv)
                if (!f.mask(buf, 1, H, HKV, Sq, Skv, 0, h, q, kv))
                  printf("case %d: tile q %lld.. kv %lld.. full but (q=%lld kv=%lld) masked\n", c, t0, k0, q, kv);
          }
        }
        for (long long k0 = 0; k0 < Skv; k0 += BT) {  // kv tiles
          const long long k1 = k0 + BT < Skv ? k0 + BT : Skv;
          long long lo, hi, glo, ghi;
          f.q(buf, 1, H, HKV, Sq, Skv, 0, h, k0, k1, &lo, &hi);
          f.gq(gbuf, 1, Hg, HKVg, Qg, KVg, 0, h + s[4], k0 + s[2], k1 + s[2], &glo, &ghi);
          clamp_shift(&glo, &ghi, s[0], Sq);
          if (lo != glo || hi != ghi) printf("case %d: q_range(h=%lld, kv %lld..%lld) = [%lld, %lld), global clamped [%lld, %lld)\n", c, h, k0, k1, lo, hi, glo, ghi);
          for (long long kv = k0; kv < k1; ++kv)
            for (long long q = 0; q < Sq; ++q)
              if ((q < lo || q >= hi) && f.mask(buf, 1, H, HKV, Sq, Skv, 0, h, q, kv))
                printf("case %d: (h=%lld q=%lld kv=%lld) kept outside q_range [%lld, %lld)\n", c, h, q, kv, lo, hi);
        }
      }
    }
  }
  printf("checked %lld\n", checked);
  return 0;
}
`

// TestFrame checks the position frame (hipsrc/frame.h) on the host against
// the generated global functions, for the masks and scores context
// parallelism runs: causal, document-causal, a sliding window, a mask that
// reads the sizes (bottom-right causal), a head-dependent mask, and scores
// reading a per-head table and the positions.
func TestFrame(t *testing.T) {
	const decls = "buffer doc: i32[KV] segments\nbuffer slopes: f32[H]\n"
	var cases []hostCase
	for _, tc := range []struct{ mask, score string }{
		{"q >= kv", ""},
		{"(q >= kv) & (doc[q] == doc[kv])", ""},
		{"(q >= kv) & (q - kv <= 40)", "score + slopes[h] * (kv - q)"},
		{"q - Q >= kv - KV", ""},
		{"(q >= kv) | (h % 2 == 1) & (kv < 10)", "score * slopes[h] + q * 0.001 - kv * 0.002"},
		{"", "score + slopes[h] * H"},
		// blocks selected per 64 rows (the row walk's selection, MASKC_KV_SELECTION)
		{"(q >= kv) & ((q // 64 == kv // 64) | (doc[q // 64] == kv // 16))", ""},
	} {
		cases = append(cases, casesOf(t, "frame.flex", maskCaseSource(decls, tc.mask, tc.score))...)
	}
	if sel := cases[len(cases)-1]; !selWalk(sel.kernel.sparsity) {
		t.Fatalf("%s: the row walk takes no selection", sel.name)
	}
	exe := buildHostMain(t, cases, frameMain, func(i int) string {
		slot := map[string]int{"doc": -1, "slopes": -1}
		for _, b := range cases[i].kernel.Buffers {
			slot[b.Name] = b.Slot
		}
		meets := "nullptr" // maskc_kv_tile_meets is there for selections only
		if selWalk(cases[i].kernel.sparsity) {
			meets = fmt.Sprintf("case%d::maskc_kv_tile_meets", i)
		}
		return fmt.Sprintf("{case%[1]d::maskc_mask, case%[1]d::maskc_g_mask, case%[1]d::maskc_score, case%[1]d::maskc_g_score, "+
			"case%[1]d::maskc_kv_range, case%[1]d::maskc_g_kv_range, case%[1]d::maskc_q_range, case%[1]d::maskc_g_q_range, "+
			"case%[1]d::maskc_tile_full, %[2]d, %[3]d, %[4]s}", i, slot["doc"], slot["slopes"], meets)
	})
	out, err := exec.Command(exe).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	last := lines[len(lines)-1]
	if len(lines) > 1 {
		if len(lines) > 20 {
			lines = append(lines[:20], "...")
		}
		t.Errorf("%d disagreements:\n%s", len(lines)-1, strings.Join(lines[:len(lines)-1], "\n"))
	}
	if !strings.HasPrefix(last, "checked ") || last == "checked 0" {
		t.Errorf("frame check did not finish: %q", last)
	}
}
