package codegen

import (
	"bufio"
	"fmt"
	"math/rand"
	"os"
	"strings"
	"testing"
)

// qRangeLaneMain reads tiles as hostMain does and prints per tile the q
// range of its kv range [kv_lo, kv_hi) from maskc_g_q_range (the
// warp-collective segment searches) and from maskc_g_q_range_lane (a lane's
// own): "lo hi lo_lane hi_lane".
const qRangeLaneMain = readTileCase + `
typedef void (*range_fn)(const MaskcBuffers&, long long, long long, long long, long long, long long, long long, long long, long long, long long, long long*, long long*);
struct Fns { range_fn warp, lane; };
static const Fns fns[] = { FNS };

int main() {
  return for_each_tile_case([](TileCase& t) {
    const Fns& f = fns[t.idx];
    long long lo = -7, hi = -7, llo = -9, lhi = -9;
    f.warp(t.buf, t.B, t.H, t.HKV, t.Q, t.KV, t.b, t.h, t.klo, t.khi, &lo, &hi);
    f.lane(t.buf, t.B, t.H, t.HKV, t.Q, t.KV, t.b, t.h, t.klo, t.khi, &llo, &lhi);
    printf("%lld %lld %lld %lld\n", lo, hi, llo, lhi);
  });
}
`

// TestHostQRangeLane checks what the ranked ordered dQ's turns rest on for
// masks with segments buffers (maskc_bwd_dq_rank_part tests a kv tile per
// lane): maskc_g_q_range_lane gives exactly maskc_g_q_range's range, the
// one the walks take, on random tiles of the packed multimodal masks and
// random masks over a segments buffer; and that it is emitted exactly where
// the mask searches a segments buffer and its q range is not monotone.
func TestHostQRangeLane(t *testing.T) {
	var all []hostCase
	for _, f := range []struct{ file, attention string }{
		{"../testdata/tilemasks/multimodal.flex", "multimodal"},
		{"../testdata/tilemasks/multimodal_spans.flex", "multimodal_spans"},
	} {
		for _, c := range casesOf(t, f.file, string(mustRead(t, f.file))) {
			if c.attn.Name == f.attention {
				all = append(all, c)
			}
		}
	}
	all = append(all, randomSegmentCases(t, 23, 120)...)
	var cases []hostCase
	for _, c := range all {
		want := len(c.kernel.sparsity.segments()) > 0 && !qRangeMonotone(c.kernel.sparsity)
		if got := c.kernel.qRangeLane != ""; got != want {
			t.Errorf("%s: maskc_g_q_range_lane emitted %v, want %v", c.name, got, want)
		}
		if strings.Contains(c.kernel.Generated, "void maskc_g_q_range_lane(") {
			t.Errorf("%s: the shared source holds the lanes' q range", c.name)
		}
		if want {
			lc := c
			k := *c.kernel
			k.Generated += "\n" + c.kernel.qRangeLane
			lc.kernel = &k
			cases = append(cases, lc)
		}
	}
	if len(cases) < 10 {
		t.Fatalf("only %d masks with the lanes' q range: the test no longer exercises it", len(cases))
	}
	exe := buildHostMain(t, cases, qRangeLaneMain, func(i int) string {
		return fmt.Sprintf("{case%[1]d::maskc_g_q_range, case%[1]d::maskc_g_q_range_lane}", i)
	})
	r := rand.New(rand.NewSource(7))
	var tiles []tileCase
	for i, c := range cases {
		for j := 0; j < 16; j++ {
			tiles = append(tiles, randomTile(r, i, c))
		}
	}
	out := runTiles(t, exe, cases, tiles)
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	n, narrowed := 0, 0
	for i := 0; sc.Scan(); i++ {
		var lo, hi, llo, lhi int64
		if _, err := fmt.Sscan(sc.Text(), &lo, &hi, &llo, &lhi); err != nil || i >= len(tiles) {
			t.Fatalf("host output line %d %q: %v", i, sc.Text(), err)
		}
		n++
		tc := tiles[i]
		if lo != llo || hi != lhi {
			t.Errorf("%s: Q=%d KV=%d b=%d h=%d kv [%d, %d): q range [%d, %d), per lane [%d, %d)",
				cases[tc.idx].name, tc.env.Q, tc.env.KV, tc.b, tc.h, tc.kvlo, tc.kvhi, lo, hi, llo, lhi)
		}
		if hi > lo && (lo > 0 || hi < tc.env.Q) {
			narrowed++
		}
	}
	if n != len(tiles) || narrowed < len(tiles)/10 {
		t.Errorf("%d of %d tiles answered, %d with a narrowed range: the searches are barely exercised", n, len(tiles), narrowed)
	}
	t.Logf("%d masks with the lanes' q range of %d, %d tiles, %d narrowed", len(cases), len(all), n, narrowed)
}

// mustRead is the file's text, or the test fails.
func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
