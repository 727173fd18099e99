package codegen

import (
	"bufio"
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// rowIntervalsMain reads tiles as hostMain does and checks, for every row q
// of the tile where maskc_g_kv_rows_exact holds, that the union of
// maskc_g_kv_intervals_lane(q, q + 1) (clamped to [0, KV), as the frame
// clamps it) is exactly the set of kv that maskc_mask keeps. It prints per
// tile "rows mismatches q kv" (the first mismatch, else -1 -1).
const rowIntervalsMain = readTileCase + `
typedef void (*range_fn)(const MaskcBuffers&, long long, long long, long long, long long, long long, long long, long long, long long, long long, long long*, long long*);
typedef bool (*exact_fn)(const MaskcBuffers&, long long, long long, long long, long long, long long);
struct Fns { mask_fn mask; range_fn lane; int nint; exact_fn exact; };
static const Fns fns[] = { FNS };

int main() {
  return for_each_tile_case([](TileCase& t) {
    const int idx = t.idx;
    const long long B = t.B, H = t.H, HKV = t.HKV, Q = t.Q, KV = t.KV, b = t.b, h = t.h;
    const long long qlo = t.qlo, qhi = t.qhi;
    const MaskcBuffers& buf = t.buf;
    const Fns& f = fns[idx];
    long long rows = 0, bad = 0, bq = -1, bkv = -1;
    if (f.exact(buf, B, H, HKV, Q, KV)) {
      for (long long q = qlo; q < qhi; ++q) {
        std::vector<long long> lo(f.nint, -7), hi(f.nint, -7);
        f.lane(buf, B, H, HKV, Q, KV, b, h, q, q + 1, lo.data(), hi.data());
        ++rows;
        for (long long kv = 0; kv < KV; ++kv) {
          bool in = false;
          for (int i = 0; i < f.nint; ++i) {
            const long long a = lo[i] < 0 ? 0 : lo[i], e = hi[i] > KV ? KV : hi[i];
            in = in || (kv >= a && kv < e);
          }
          if (in != f.mask(buf, B, H, HKV, Q, KV, b, h, q, kv)) {
            if (bad++ == 0) bq = q, bkv = kv;
          }
        }
      }
    }
    printf("%lld %lld %lld %lld\n", rows, bad, bq, bkv);
  });
}
`

// TestHostRowIntervals checks the claim behind MASKC_KV_ROWS_EXACT (the
// forward's MASKC_ROW_BITS tests a partial tile's keys against each row's
// intervals instead of the mask): for every mask codegen marks exact, the
// per-lane intervals of one row are that row's kept keys, on random tiles
// of the hand-picked cases, the golden inputs and random masks. It also
// checks that the marking is not vacuous (documents, windows and block
// masks are exact) and that masks with a condition evaluated per element
// are not marked.
func TestHostRowIntervals(t *testing.T) {
	var all []hostCase
	for _, mc := range maskCases {
		all = append(all, casesOf(t, mc.name+".flex", maskCaseSource(mc.decls, mc.mask, mc.score))...)
	}
	all = append(all, goldenCases(t)...)
	g := exprGen{rand.New(rand.NewSource(19))}
	for i := 0; i < 120; i++ {
		src := maskCaseSource("buffer doc: i32[KV] segments\nbuffer t: i32[KV]\n", g.boolExpr(3), "")
		for overflows(t, src) {
			src = maskCaseSource("buffer doc: i32[KV] segments\nbuffer t: i32[KV]\n", g.boolExpr(3), "")
		}
		all = append(all, casesOf(t, fmt.Sprintf("random%d.flex", i), src)...)
	}
	var cases []hostCase
	segs := 0
	for _, c := range all {
		marked := strings.Contains(c.kernel.Generated, "#define MASKC_KV_ROWS_EXACT 1")
		if marked != rowsExact(c.kernel.sparsity) {
			t.Errorf("%s: MASKC_KV_ROWS_EXACT emitted %v, rowsExact %v", c.name, marked, !marked)
		}
		if !marked {
			continue
		}
		if strings.Contains(c.kernel.Generated, "evaluated per element") {
			t.Errorf("%s: marked exact but has a condition evaluated per element", c.name)
		}
		if len(c.kernel.sparsity.segments()) > 0 {
			segs++
		}
		cases = append(cases, c)
	}
	if len(cases) < 20 || segs < 3 {
		t.Fatalf("only %d exact masks (%d with segments): the test no longer exercises the row intervals", len(cases), segs)
	}
	exe := buildHostMain(t, cases, rowIntervalsMain, func(i int) string {
		return fmt.Sprintf("{case%[1]d::maskc_mask, case%[1]d::maskc_g_kv_intervals_lane, case%[1]d::maskc_kv_interval_count, case%[1]d::maskc_g_kv_rows_exact}", i)
	})
	r := rand.New(rand.NewSource(5))
	var tiles []tileCase
	for i, c := range cases {
		for j := 0; j < 12; j++ {
			tiles = append(tiles, randomTile(r, i, c))
		}
	}
	out := runTiles(t, exe, cases, tiles)
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	rows := 0
	for i := 0; sc.Scan(); i++ {
		var n, bad, q, kv int
		if _, err := fmt.Sscan(sc.Text(), &n, &bad, &q, &kv); err != nil || i >= len(tiles) {
			t.Fatalf("host output line %d %q: %v", i, sc.Text(), err)
		}
		rows += n
		if bad > 0 {
			tc := tiles[i]
			t.Errorf("%s: Q=%d KV=%d b=%d h=%d: %d keys where the row intervals and the mask disagree, first (q=%d, kv=%d)",
				cases[tc.idx].name, tc.env.Q, tc.env.KV, tc.b, tc.h, bad, q, kv)
		}
	}
	if rows < 1000 {
		t.Errorf("only %d rows checked", rows)
	}
	t.Logf("%d exact masks (%d with segments) of %d, %d rows checked", len(cases), segs, len(all), rows)
}
