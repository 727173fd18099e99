package check

import (
	"sort"
	"strings"
)

// suggest returns the candidate closest to name by edit distance, or "" when
// none is close enough to be a plausible typo.
func suggest(name string, candidates []string) string {
	best, bestDist := "", -1
	sorted := append([]string(nil), candidates...)
	sort.Strings(sorted)
	for _, c := range sorted {
		if c == name {
			continue
		}
		d := editDistance(name, c)
		if strings.EqualFold(name, c) {
			d = 1
		}
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	limit := max(1, len(name)/3)
	if bestDist < 0 || bestDist > limit {
		return ""
	}
	return best
}

// didYouMean formats a hint for suggest's result, or "" when there is none.
func didYouMean(name string, candidates []string) string {
	if s := suggest(name, candidates); s != "" {
		return "did you mean " + s + "?"
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b, counted in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
