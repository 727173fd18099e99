package tilemap

import "testing"

// TestLoose covers the warning's threshold, the term it names, ties and a
// hull described as a phrase.
func TestLoose(t *testing.T) {
	terms := []string{"term `kv <= q`", "term `kv % 4 == 0` (its kv range leaves out `kv % 4 == 0`)"}
	hull := []string{"the hull of the 9 terms a | b"}
	for _, tc := range []struct {
		name string
		w    Waste
		c    Counts
		want string
	}{
		{"at 1.25x", Waste{terms, []int64{0, 25}}, Counts{Visited: 125, WithKept: 100}, ""},
		{"nothing visited", Waste{terms, []int64{0, 0}}, Counts{}, ""},
		{"loose term", Waste{terms, []int64{3, 26}}, Counts{Visited: 126, WithKept: 100},
			"visits 126 tiles, 1.26x the 100 holding a kept pair (over 1.25x): the kv range walked for term `kv % 4 == 0` (its kv range leaves out `kv % 4 == 0`) reaches 26 of the 26 visited without one"},
		{"ties", Waste{terms, []int64{50, 50}}, Counts{Visited: 150, WithKept: 100},
			"visits 150 tiles, 1.50x the 100 holding a kept pair (over 1.25x): the kv range walked for term `kv <= q` reaches 50 of the 50 visited without one, as do 1 other terms"},
		{"none kept", Waste{hull, []int64{8}}, Counts{Visited: 8},
			"visits 8 tiles, none of them holding a kept pair: the kv range walked for the hull of the 9 terms a | b reaches 8 of the 8 visited without one"},
	} {
		if got := tc.w.Loose(tc.c); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}
