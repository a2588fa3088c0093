package search

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
)

// This file holds the bo strategy: Bayesian optimisation with a Gaussian
// process, then the model strategy's local search from the best point.
//
//  1. starts: the Keep candidates and a tenth of the evaluation budget at
//     random (at least 3);
//  2. global phase: the unmeasured candidate of greatest expected
//     improvement under a Gaussian process of the measured log times, for
//     three quarters of the budget (at most boGlobalMax evaluations);
//  3. local phase: model's iterated local search (ranked neighbours,
//     ranked perturbations) from the best point, for the rest.
//
// The global phase finds the promising basins of a space with few
// evaluations; expected improvement alone is slow to settle the last few
// per cent inside a basin, which the local phase does. Samples are raced
// as in every local strategy.
//
// The Gaussian process places each parameter on [0, 1] by the index of its
// value among the sorted distinct values (parameters with one value are
// dropped) and uses the Matérn 5/2 kernel on the Euclidean distance, with
// length boLength·√D for D parameters. Log times are standardised; a failed
// candidate counts as the slowest measured. The posterior is updated
// incrementally: for every candidate c the process keeps v_c = L⁻¹k(X, c),
// L the Cholesky factor of K+σ²I over the n measured points X, so a
// measurement costs O(N·n) for N candidates, the posterior mean is v_c·z
// with z = L⁻¹y, and the variance 1−|v_c|².

// Hyper-parameters, chosen on the mean over the shared caches (docs/design/search.md).
const (
	// boLength is the kernel's length scale per √(parameter).
	boLength = 1.0
	// boNoise is the noise variance added to the kernel's diagonal (the
	// standardised signal variance is 1).
	boNoise = 0.01
	// boXi is expected improvement's exploration margin, in standard
	// deviations of the measured log times: a near-certain gain smaller
	// than it counts for little against an uncertain candidate. 0.3, not
	// 0.1: convolution spaces hide their optimum in a region of poor
	// average time, which a greedier process leaves unexplored (held-out
	// caches, docs/design/search.md).
	boXi = 0.3
	// boGlobalMax caps the global phase: it costs O(N·n) memory and time per
	// measurement, and the local phase does better beyond it.
	boGlobalMax = 150
	// boPoolMax caps the candidates the process tracks (a random subset of
	// larger spaces, so memory stays at boPoolMax·(boGlobalMax+starts) floats).
	boPoolMax = 20000
)

// boPhases returns the random starts and the length of the global phase
// for an evaluation budget (0: none, as in tune with a wall-time budget).
func boPhases(budget int) (starts, global int) {
	if budget <= 0 {
		return 10, 100
	}
	return max(3, budget/10), min(budget*3/4, boGlobalMax)
}

// gp is the Gaussian process over a fixed pool of candidates.
type gp struct {
	xs     [][]float64 // features per pool candidate
	v      [][]float64 // L⁻¹k(X, x_c) per pool candidate
	sq     []float64   // |v_c|²
	L      [][]float64
	ys     []float64 // log cost per training point; +Inf for failures
	length float64
}

func newGP(g *grid, pool []Candidate) *gp {
	var dims []int
	for i := range g.names {
		if len(g.values[i]) > 1 {
			dims = append(dims, i)
		}
	}
	p := &gp{length: boLength * math.Sqrt(float64(max(1, len(dims))))}
	for _, c := range pool {
		x := make([]float64, len(dims))
		for j, i := range dims {
			x[j] = float64(g.pos[i][c[g.names[i]]]) / float64(len(g.values[i])-1)
		}
		p.xs = append(p.xs, x)
	}
	p.v = make([][]float64, len(p.xs))
	p.sq = make([]float64, len(p.xs))
	return p
}

func (p *gp) kernel(a, b []float64) float64 {
	d := 0.0
	for i := range a {
		t := a[i] - b[i]
		d += t * t
	}
	r := math.Sqrt(5*d) / p.length
	return (1 + r + r*r/3) * math.Exp(-r)
}

// add makes pool candidate i a training point with log cost y: the new row
// of L is v_i and its diagonal, and every v_c gains one element.
func (p *gp) add(i int, y float64) {
	n := len(p.ys)
	row := append(append([]float64(nil), p.v[i][:n]...), 0)
	d := math.Sqrt(math.Max(1+boNoise-p.sq[i], 1e-9))
	row[n] = d
	p.L = append(p.L, row)
	xi := p.xs[i]
	for c := range p.xs {
		s := p.kernel(p.xs[c], xi)
		vc := p.v[c]
		for j := 0; j < n; j++ {
			s -= row[j] * vc[j]
		}
		s /= d
		p.v[c] = append(vc, s)
		p.sq[c] += s * s
	}
	p.ys = append(p.ys, y)
}

// scale is the mean and standard deviation by which the log times are
// standardised, and the worst finite log time; ok is false while nothing
// valid is measured.
func (p *gp) scale() (mean, sd, worst float64, ok bool) {
	worst, mean, n := finiteStats(p.ys)
	if n == 0 {
		return 0, 0, 0, false
	}
	vr := 0.0
	for _, y := range p.ys {
		if !math.IsInf(y, 1) {
			vr += (y - mean) * (y - mean)
		}
	}
	sd = math.Sqrt(vr / float64(n))
	if sd <= 1e-12 {
		sd = 1
	}
	return mean, sd, worst, true
}

// whitened returns z = L⁻¹y for the standardised targets and the
// standardised best target; ok is false while nothing valid is measured.
func (p *gp) whitened() (z []float64, best float64, ok bool) {
	mean, sd, worst, ok := p.scale()
	if !ok {
		return nil, 0, false
	}
	best = math.Inf(1)
	z = make([]float64, len(p.ys))
	for i, y := range p.ys {
		if math.IsInf(y, 1) {
			y = worst
		}
		t := (y - mean) / sd
		best = math.Min(best, t)
		for j := 0; j < i; j++ {
			t -= p.L[i][j] * z[j]
		}
		z[i] = t / p.L[i][i]
	}
	return z, best, true
}

// truncate drops the training points after the first n; sq holds every
// |v_c|² as it was with n points.
func (p *gp) truncate(n int, sq []float64) {
	p.ys, p.L = p.ys[:n], p.L[:n]
	for c := range p.v {
		p.v[c] = p.v[c][:n]
	}
	copy(p.sq, sq)
}

// posterior is the standardised mean and standard deviation at pool candidate c.
func (p *gp) posterior(c int, z []float64) (mu, sd float64) {
	for j, vj := range p.v[c] {
		mu += vj * z[j]
	}
	return mu, math.Sqrt(math.Max(1-p.sq[c], 1e-12))
}

// expectedImprovement of a normal N(mu, sd²) below best by more than xi.
func expectedImprovement(mu, sd, best, xi float64) float64 {
	imp := best - mu - xi
	u := imp / sd
	return imp*0.5*math.Erfc(-u/math.Sqrt2) + sd*math.Exp(-u*u/2)/math.Sqrt(2*math.Pi)
}

// bo is the global phase's proposer state, used by ils (field bo).
type bo struct {
	gp    *gp
	pool  []Candidate
	index map[string]int // pool index by key
	done  []bool         // measured or believed, by pool index
	left  int            // proposals left in the global phase
	// believed are the pool indices of a batch's proposals, added to the
	// process at its own prediction (believe) until the first measurement
	// comes back; mark and sq0 are the process's size and |v_c|² before.
	believed []int
	mark     int
	sq0      []float64
}

func newBO(ls *localState, global int) *bo {
	pool := ls.g.list
	if len(pool) > boPoolMax {
		// The starts first, then a random subset.
		in := map[string]bool{}
		var sub []Candidate
		for _, c := range ls.starts {
			if !in[c.Key()] {
				in[c.Key()] = true
				sub = append(sub, c)
			}
		}
		perm := rand.New(rand.NewPCG(ls.rng.Uint64(), ls.rng.Uint64())).Perm(len(pool))
		for _, j := range perm {
			if len(sub) >= boPoolMax {
				break
			}
			if c := pool[j]; !in[c.Key()] {
				in[c.Key()] = true
				sub = append(sub, c)
			}
		}
		pool = sub
	}
	b := &bo{gp: newGP(ls.g, pool), pool: pool, index: make(map[string]int, len(pool)), done: make([]bool, len(pool)), left: global}
	for i, c := range pool {
		b.index[c.Key()] = i
	}
	return b
}

// active reports whether the global phase still proposes.
func (b *bo) active() bool { return b.left > 0 }

// pick is the unmeasured pool candidate of greatest expected improvement
// (false when nothing valid is measured yet or the pool is exhausted).
func (b *bo) pick() (Candidate, bool) {
	z, best, ok := b.gp.whitened()
	if !ok {
		return nil, false
	}
	bi, bv := -1, math.Inf(-1)
	for i := range b.pool {
		if b.done[i] {
			continue
		}
		mu, sd := b.gp.posterior(i, z)
		if ei := expectedImprovement(mu, sd, best, boXi); ei > bv {
			bi, bv = i, ei
		}
	}
	if bi < 0 {
		return nil, false
	}
	return b.pool[bi], true
}

// believe makes a proposal of the current batch, not yet measured, a
// training point at the process's own prediction there (the Kriging
// believer): the mean stays, the uncertainty around it collapses, so the
// batch's next pick goes where expected improvement is left rather than
// next to this one. The believed points are dropped when the first
// measurement comes back (forget).
func (b *bo) believe(c Candidate) {
	i, ok := b.index[c.Key()]
	if !ok || b.done[i] {
		return
	}
	mean, sd, _, ok := b.gp.scale()
	if !ok {
		return
	}
	z, _, _ := b.gp.whitened()
	if len(b.believed) == 0 {
		b.mark, b.sq0 = len(b.gp.ys), append(b.sq0[:0], b.gp.sq...)
	}
	mu, _ := b.gp.posterior(i, z)
	b.gp.add(i, mean+sd*mu)
	b.done[i] = true
	b.believed = append(b.believed, i)
}

// forget drops the believed points.
func (b *bo) forget() {
	if len(b.believed) == 0 {
		return
	}
	for _, i := range b.believed {
		b.done[i] = false
	}
	b.gp.truncate(b.mark, b.sq0)
	b.believed = b.believed[:0]
}

// observe trains the process on a measured candidate (cost +Inf: failed).
func (b *bo) observe(c Candidate, cost float64) {
	b.forget()
	i, ok := b.index[c.Key()]
	if !ok || b.done[i] {
		return
	}
	b.done[i] = true
	y := math.Inf(1)
	if cost > 0 && !math.IsInf(cost, 1) {
		y = math.Log(cost)
	}
	b.gp.add(i, y)
}

// ranked are up to n unmeasured pool candidates of greatest expected
// improvement, best first, believing nothing.
func (b *bo) ranked(n int) []Candidate {
	z, best, ok := b.gp.whitened()
	if !ok || n <= 0 {
		return nil
	}
	type scored struct {
		i  int
		ei float64
	}
	var top []scored
	for i := range b.pool {
		if b.done[i] {
			continue
		}
		mu, sd := b.gp.posterior(i, z)
		ei := expectedImprovement(mu, sd, best, boXi)
		if len(top) < n || ei > top[len(top)-1].ei {
			j := sort.Search(len(top), func(j int) bool { return top[j].ei < ei })
			top = slices.Insert(top, j, scored{i, ei})
			if len(top) > n {
				top = top[:n]
			}
		}
	}
	out := make([]Candidate, len(top))
	for j, s := range top {
		out[j] = b.pool[s.i]
	}
	return out
}
