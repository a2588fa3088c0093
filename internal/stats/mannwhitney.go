package stats

import (
	"math"
	"sort"
)

// MannWhitney is the result of a Mann-Whitney U test of two samples x and y.
type MannWhitney struct {
	// U is the statistic of x: the number of pairs (x_i, y_j) with
	// x_i > y_j, ties counting one half.
	U float64
	// Z is the normal score of U (with the tie correction, without the
	// continuity correction); 0 when every value is tied.
	Z float64
	// PLess is the one-sided p-value of the alternative "x tends to be
	// smaller than y"; PGreater of "x tends to be larger". Both use the
	// normal approximation with tie and continuity corrections, as
	// scipy.stats.mannwhitneyu(method="asymptotic") does; both are 1 when
	// there is no evidence either way (an empty sample, all values tied).
	PLess, PGreater float64
}

// MannWhitneyU tests whether x and y come from the same distribution
// against one-sided shifts, without assuming normality: timing samples are
// skewed by outliers, which ranks ignore.
func MannWhitneyU(x, y []float64) MannWhitney {
	n1, n2 := float64(len(x)), float64(len(y))
	if len(x) == 0 || len(y) == 0 {
		return MannWhitney{PLess: 1, PGreater: 1}
	}
	type obs struct {
		v   float64
		inX bool
	}
	all := make([]obs, 0, len(x)+len(y))
	for _, v := range x {
		all = append(all, obs{v, true})
	}
	for _, v := range y {
		all = append(all, obs{v, false})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v < all[j].v })
	// Midranks; tieSum accumulates t³−t over groups of t tied values.
	var r1, tieSum float64
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		rank := float64(i+j+1) / 2 // mean of ranks i+1 … j
		for k := i; k < j; k++ {
			if all[k].inX {
				r1 += rank
			}
		}
		t := float64(j - i)
		tieSum += t*t*t - t
		i = j
	}
	u := r1 - n1*(n1+1)/2
	n := n1 + n2
	mu := n1 * n2 / 2
	variance := n1 * n2 / 12 * ((n + 1) - tieSum/(n*(n-1)))
	res := MannWhitney{U: u, PLess: 1, PGreater: 1}
	if variance <= 0 {
		return res
	}
	sd := math.Sqrt(variance)
	res.Z = (u - mu) / sd
	res.PLess = normalCDF((u - mu + 0.5) / sd)
	res.PGreater = 1 - normalCDF((u-mu-0.5)/sd)
	res.PLess = math.Min(1, res.PLess)
	res.PGreater = math.Min(1, math.Max(0, res.PGreater))
	return res
}

func normalCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }
