package codegen

import (
	"bufio"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/maskc/maskc/eval"
)

// TestPeriodMeets checks periodMeets (maskc_period_meets's twin) against
// the remainders of every value of the range.
func TestPeriodMeets(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for i := 0; i < 20000; i++ {
		d := 1 + r.Int63n(40)
		lo := r.Int63n(d)
		hi := lo + r.Int63n(d-lo)
		nLo := r.Int63n(200) - 100
		nHi := nLo + r.Int63n(60) - 3
		want := false
		for n := nLo; n <= nHi; n++ {
			if m := n - d*floorDiv(n, d); m >= lo && m <= hi {
				want = true
			}
		}
		if got := periodMeets(nLo, nHi, d, lo, hi); got != want {
			t.Fatalf("periodMeets(%d, %d, %d, %d, %d) = %v, want %v", nLo, nHi, d, lo, hi, got, want)
		}
	}
}

// periodCases are masks with remainder conditions on q and kv: strided,
// offset residues, ranges, sums with coefficients, a remainder over kv - q
// that wraps below zero, one through a symbol, one beside a window, block
// indices (floor quotients of q or kv) and one whose remainder no tile can
// miss (no filter).
var periodCases = []struct {
	decls, mask string
	filter      bool
}{
	{"", "kv <= q and (q - kv < 100 or (q - kv) % 256 == 0)", true},
	{"", "(q - kv) % 300 == 7", true},
	{"", "(2 * q + kv) % 500 < 3 or kv == q", true},
	{"", "(kv - q + 13) % 400 >= 390", true},
	{"", "q >= kv and (q + 3 * kv) % 900 <= 40", true},
	{"buffer off: i32[B]\n", "(q - kv + off[b]) % 350 == 0", true},
	{"", "abs(q - kv) < 64 or (q - kv) % 512 < 16", true},
	{"", "kv <= q and (q // 256 - kv // 256) % 2 == 0", true},
	{"", "(q // 100 + 2 * (kv // 50) + 1) % 7 == 3 and kv <= q", true},
	{"", "((q + 5) // 64 - kv) % 300 < 9", true},
	{"", "kv <= q and (q // 192) % 3 == (kv // 192) % 3", true},
	{"", "(q // 100) % 4 == (kv // 40) % 4", true},
	{"", "kv <= q and (q % 512) // 64 == (kv % 512) // 64", true},
	{"", "kv <= q and (q - kv) % 2 == 0", false},
}

// filterMain reads tiles (readTileCase) and prints per tile whether
// maskc_kv_tile_meets (hipsrc/frame.h under MASKC_KV_TILE_FILTER) keeps
// it, then whether the mask keeps a pair of it.
const filterMain = readTileCase + `
typedef bool (*meets_fn)(const MaskcBuffers&, long long, long long, long long, long long, long long, long long, long long, long long, long long, long long, long long);
struct Fns { mask_fn mask; meets_fn meets; };
static const Fns fns[] = { FNS };

int main() {
  return for_each_tile_case([](TileCase& t) {
    const Fns& f = fns[t.idx];
    bool any = false;
    for (long long q = t.qlo; q < t.qhi && !any; ++q)
      for (long long kv = t.klo; kv < t.khi && !any; ++kv) any = f.mask(t.buf, t.B, t.H, t.HKV, t.Q, t.KV, t.b, t.h, q, kv);
    printf("%d %d\n", f.meets(t.buf, t.B, t.H, t.HKV, t.Q, t.KV, t.b, t.h, t.qlo, t.qhi, t.klo, t.khi) ? 1 : 0, any ? 1 : 0);
  });
}
`

// TestHostTileFilter checks the tile filter of masks with remainder
// conditions: codegen emits it where a remainder can fail on a whole tile
// (and the plan is analytic, even for a term bounded by nothing else);
// compiled on the host, maskc_kv_tile_meets rejects only tiles where the
// mask keeps no pair, and agrees with HostSparsity.KVTileMeets, on random
// tiles of the platforms' shapes and smaller.
func TestHostTileFilter(t *testing.T) {
	var cases []hostCase
	for i, pc := range periodCases {
		cs := casesOf(t, fmt.Sprintf("period%d.flex", i), maskCaseSource(pc.decls, pc.mask, ""))
		k := cs[0].kernel
		emitted := strings.Contains(k.Generated, "#define MASKC_KV_TILE_FILTER 1\n")
		if emitted != pc.filter || tileFilter(k.sparsity) != pc.filter {
			t.Errorf("%s: filter emitted %v, tileFilter %v, want %v", pc.mask, emitted, tileFilter(k.sparsity), pc.filter)
		}
		if k.Sparsity != SparsityAnalytic {
			t.Errorf("%s: sparsity %s, want analytic", pc.mask, k.Sparsity)
		}
		if pc.filter {
			cases = append(cases, cs[0])
		}
	}
	exe := buildHostMain(t, cases, filterMain, func(i int) string {
		return fmt.Sprintf("{case%[1]d::maskc_mask, case%[1]d::maskc_kv_tile_meets}", i)
	})
	r := rand.New(rand.NewSource(11))
	var tiles []tileCase
	for i, c := range cases {
		for j := 0; j < 300; j++ {
			env := &eval.Env{B: 1 + r.Int63n(2), H: 1 + r.Int63n(2), Q: 1 + r.Int63n(1500), KV: 1 + r.Int63n(1500), Buffers: map[string]*eval.Tensor{}}
			env.HKV = env.H
			tc := tileCase{idx: i, env: env, bits: map[string][]float64{}, b: r.Int63n(env.B), h: r.Int63n(env.H)}
			if c.prog.Buffer("off") != nil {
				off := eval.NewTensor(int(env.B))
				for k := range off.Data {
					off.Data[k] = float64(r.Intn(2000) - 1000)
				}
				env.Buffers["off"], tc.bits["off"] = off, off.Data
			}
			bm, bn := []int64{128, 64, 32, 7}[r.Intn(4)], []int64{32, 64, 128, 5}[r.Intn(4)]
			tc.qlo = r.Int63n(env.Q)
			tc.qhi = min(env.Q, tc.qlo+bm)
			tc.kvlo = r.Int63n(env.KV)
			tc.kvhi = min(env.KV, tc.kvlo+bn)
			tiles = append(tiles, tc)
		}
	}
	out := runTiles(t, exe, cases, tiles)
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	rejected := map[int]int{}
	for i := 0; sc.Scan(); i++ {
		var meets, any int
		if _, err := fmt.Sscan(sc.Text(), &meets, &any); err != nil || i >= len(tiles) {
			t.Fatalf("host output line %d %q: %v", i, sc.Text(), err)
		}
		tc := tiles[i]
		c := cases[tc.idx]
		if meets == 0 && any == 1 {
			t.Errorf("%s: Q=%d KV=%d b=%d h=%d: tile [%d, %d) x [%d, %d) rejected but keeps a pair", c.name, tc.env.Q, tc.env.KV, tc.b, tc.h, tc.qlo, tc.qhi, tc.kvlo, tc.kvhi)
		}
		hs, err := c.kernel.HostSparsity(tc.env)
		if err != nil {
			t.Fatal(err)
		}
		host, err := hs.KVTileMeets(tc.b, tc.h, tc.qlo, tc.qhi, tc.kvlo, tc.kvhi)
		if err != nil {
			t.Fatal(err)
		}
		if host != (meets == 1) {
			t.Errorf("%s: tile [%d, %d) x [%d, %d): maskc_kv_tile_meets %d, KVTileMeets %v", c.name, tc.qlo, tc.qhi, tc.kvlo, tc.kvhi, meets, host)
		}
		if meets == 0 {
			rejected[tc.idx]++
		}
	}
	for i, c := range cases {
		if rejected[i] < 20 {
			t.Errorf("%s: the filter rejected %d of 300 tiles: the test no longer exercises it", c.name, rejected[i])
		}
	}
}
