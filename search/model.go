package search

import (
	"math"
	"sort"
)

// This file holds the surrogate behind the model strategy: iterated local
// search (ils) whose neighbours are tried in the order a regression model
// predicts fastest instead of at random, and whose perturbation at a local
// optimum is the fastest predicted of several random ones. The model is
// kernel ridge regression (the posterior mean of a Gaussian process) of
// log(time) on the measured configurations, with an exponential Hamming
// kernel: k(a, b) = exp(-h/(P·modelLength)), h the number of parameters in
// which a and b differ and P the number of parameters. Samples are raced
// exactly as in ils, so the model only changes the order of the search.

// Hyper-parameters, chosen on the mean over the shared caches (docs/design/search.md).
const (
	// modelLength is the kernel's length scale as a fraction of the parameters.
	modelLength = 0.5
	// modelRidge is the noise term added to the kernel's diagonal (the
	// kernel's own diagonal is 1).
	modelRidge = 0.05
	// modelPerturbTries is how many random perturbations the model ranks.
	modelPerturbTries = 8
)

// surrogate is the regression: training points are added one at a time and
// the Cholesky factor of K+λI grows by one row each, so a refit costs O(n²).
type surrogate struct {
	g   *grid
	idx map[string][]int // parameter value indices per candidate key

	xs [][]int
	ys []float64 // log(cost); +Inf for a failed candidate
	L  [][]float64
}

func newSurrogate(g *grid) *surrogate {
	s := &surrogate{g: g, idx: make(map[string][]int, len(g.list))}
	for _, c := range g.list {
		x := make([]int, len(g.names))
		for i, n := range g.names {
			x[i] = g.pos[i][c[n]]
		}
		s.idx[c.Key()] = x
	}
	return s
}

func (s *surrogate) kernel(a, b []int) float64 {
	h := 0
	for i := range a {
		if a[i] != b[i] {
			h++
		}
	}
	if len(a) == 0 {
		return 1
	}
	return math.Exp(-float64(h) / (float64(len(a)) * modelLength))
}

// observe adds a measured candidate (cost +Inf when it failed).
func (s *surrogate) observe(c Candidate, cost float64) {
	x, ok := s.idx[c.Key()]
	if !ok {
		return
	}
	y := math.Inf(1)
	if cost > 0 && !math.IsInf(cost, 1) {
		y = math.Log(cost)
	}
	n := len(s.xs)
	row := make([]float64, n+1)
	d := 1 + modelRidge
	for j := 0; j < n; j++ {
		v := s.kernel(x, s.xs[j])
		for l := 0; l < j; l++ {
			v -= row[l] * s.L[j][l]
		}
		row[j] = v / s.L[j][j]
		d -= row[j] * row[j]
	}
	row[n] = math.Sqrt(math.Max(d, 1e-9))
	s.L = append(s.L, row)
	s.xs = append(s.xs, x)
	s.ys = append(s.ys, y)
}

// solve returns the dual weights and the prior mean (the mean measured
// log time). A failed candidate counts as the slowest one measured, so the
// model steers away from regions that fail.
func (s *surrogate) solve() ([]float64, float64) {
	worst, mean, n := finiteStats(s.ys)
	m := len(s.ys)
	if n == 0 {
		return make([]float64, m), 0
	}
	z := make([]float64, m)
	for i, y := range s.ys {
		if math.IsInf(y, 1) {
			y = worst
		}
		v := y - mean
		for j := 0; j < i; j++ {
			v -= s.L[i][j] * z[j]
		}
		z[i] = v / s.L[i][i]
	}
	a := make([]float64, m)
	for i := m - 1; i >= 0; i-- {
		v := z[i]
		for j := i + 1; j < m; j++ {
			v -= s.L[j][i] * a[j]
		}
		a[i] = v / s.L[i][i]
	}
	return a, mean
}

// finiteStats returns the largest and the mean of the finite log times in
// ys (+Inf marks a failure) and how many there are.
func finiteStats(ys []float64) (worst, mean float64, n int) {
	worst, sum := math.Inf(-1), 0.0
	for _, y := range ys {
		if !math.IsInf(y, 1) {
			worst = math.Max(worst, y)
			sum += y
			n++
		}
	}
	if n > 0 {
		mean = sum / float64(n)
	}
	return worst, mean, n
}

// predict is the predicted log time of each candidate.
func (s *surrogate) predict(cs []Candidate) []float64 {
	alpha, mean := s.solve()
	out := make([]float64, len(cs))
	for i, c := range cs {
		x, ok := s.idx[c.Key()]
		if !ok {
			out[i] = math.Inf(1)
			continue
		}
		p := mean
		for j, xj := range s.xs {
			p += alpha[j] * s.kernel(x, xj)
		}
		out[i] = p
	}
	return out
}

// rank sorts cs in place by predicted time, fastest first; the sort is
// stable so that ties keep their (random) order. With fewer than two
// measurements there is nothing to learn from and cs is left as is.
func (s *surrogate) rank(cs []Candidate) {
	if len(s.xs) < 2 || len(cs) < 2 {
		return
	}
	pred := s.predict(cs)
	ix := make([]int, len(cs))
	for i := range ix {
		ix[i] = i
	}
	sort.SliceStable(ix, func(a, b int) bool { return pred[ix[a]] < pred[ix[b]] })
	out := make([]Candidate, len(cs))
	for i, j := range ix {
		out[i] = cs[j]
	}
	copy(cs, out)
}
