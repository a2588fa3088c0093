package replay

import "math"

// Across is one strategy at one budget over several caches: what a table
// of strategies over caches (kerntune replay --markdown) shows.
type Across struct {
	Evals int
	// MeanRatio is the mean over caches of their mean ratios; MeanRatioSE
	// its standard error: the caches' runs are independent, so the error
	// of the mean over C caches is √(Σ se²)/C.
	MeanRatio   float64
	MeanRatioSE float64
	// WorstRatio is the worst ratio over every cache and run.
	WorstRatio float64
	// MeanSimTimeS is the mean over caches of the simulated time.
	MeanSimTimeS float64
	// PerCache holds each cache's mean ratio, in the order of the reports.
	PerCache []float64
}

// AcrossCaches combines, for the si-th strategy and its bi-th budget, the
// reports RunAll returns (by cache, then strategy).
func AcrossCaches(reports [][]Report, si, bi int) Across {
	a := Across{WorstRatio: 1}
	if len(reports) == 0 {
		return a
	}
	n := float64(len(reports))
	a.Evals = reports[0][si].Budgets[bi].Evals
	var se2 float64
	for _, rs := range reports {
		b := rs[si].Budgets[bi]
		a.MeanRatio += b.MeanRatio / n
		se2 += b.MeanRatioSE * b.MeanRatioSE
		a.MeanSimTimeS += b.SimTimeS / n
		a.WorstRatio = min(a.WorstRatio, b.WorstRatio)
		a.PerCache = append(a.PerCache, b.MeanRatio)
	}
	a.MeanRatioSE = math.Sqrt(se2) / n
	return a
}
