package kernels

import (
	"math"
	"runtime"
	"sync"
)

// parallelRows runs f over row ranges [lo,hi) of n rows on all cores; the
// references are plain loops, and large shapes would otherwise take seconds.
func parallelRows(n int, f func(lo, hi int)) {
	workers := runtime.GOMAXPROCS(0)
	if workers > n {
		workers = n
	}
	if workers <= 1 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(lo, hi)
		}()
	}
	wg.Wait()
}

// refGemmAV: C[m×n] = A[m×k]·V[k×n].
func refGemmAV(c Case, in [][]float32) []float64 {
	m, n, k := c.Shape[0], c.Shape[1], c.Shape[2]
	a, v := in[0], in[1]
	out := make([]float64, m*n)
	parallelRows(m, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row := out[i*n : (i+1)*n]
			for p := 0; p < k; p++ {
				aip := float64(a[i*k+p])
				vp := v[p*n : (p+1)*n]
				for j := range row {
					row[j] += aip * float64(vp[j])
				}
			}
		}
	})
	return out
}

// refGemmAtB: Z[n×k] = Aᵀ·B with A m×n, B m×k.
func refGemmAtB(c Case, in [][]float32) []float64 {
	m, n, k := c.Shape[0], c.Shape[1], c.Shape[2]
	a, b := in[0], in[1]
	out := make([]float64, n*k)
	parallelRows(n, func(lo, hi int) {
		for p := 0; p < m; p++ {
			bp := b[p*k : (p+1)*k]
			for i := lo; i < hi; i++ {
				api := float64(a[p*n+i])
				row := out[i*k : (i+1)*k]
				for j := range row {
					row[j] += api * float64(bp[j])
				}
			}
		}
	})
	return out
}

// refGemvNT: y[n] = x[k]·Wᵀ (+ bias), W n×k.
func refGemvNT(c Case, in [][]float32) []float64 {
	n, k := c.Shape[1], c.Shape[2]
	x, w := in[0], in[1]
	out := make([]float64, n)
	parallelRows(n, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			var s float64
			wj := w[j*k : (j+1)*k]
			for p, wv := range wj {
				s += float64(x[p]) * float64(wv)
			}
			if c.Bias {
				s += float64(in[2][j])
			}
			out[j] = s
		}
	})
	return out
}

// refSoftmax: y[r,:] = exp(x[r,:] − max) / Σ exp(x[r,:] − max).
func refSoftmax(c Case, in [][]float32) []float64 {
	rows, cols := c.Shape[0], c.Shape[1]
	x := in[0]
	out := make([]float64, rows*cols)
	parallelRows(rows, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, yr := x[r*cols:(r+1)*cols], out[r*cols:(r+1)*cols]
			mx := math.Inf(-1)
			for _, v := range xr {
				mx = math.Max(mx, float64(v))
			}
			var s float64
			for i, v := range xr {
				yr[i] = math.Exp(float64(v) - mx)
				s += yr[i]
			}
			for i := range yr {
				yr[i] /= s
			}
		}
	})
	return out
}

// refRMSNorm: y[r,c] = x[r,c] / sqrt(mean(x[r,:]²) + eps) · w[c].
func refRMSNorm(c Case, in [][]float32) []float64 {
	rows, cols := c.Shape[0], c.Shape[1]
	x, w := in[0], in[1]
	out := make([]float64, rows*cols)
	parallelRows(rows, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, yr := x[r*cols:(r+1)*cols], out[r*cols:(r+1)*cols]
			var ss float64
			for _, v := range xr {
				ss += float64(v) * float64(v)
			}
			inv := 1 / math.Sqrt(ss/float64(cols)+RMSNormEps)
			for i, v := range xr {
				yr[i] = float64(v) * inv * float64(w[i])
			}
		}
	})
	return out
}

// RelError returns ‖got−want‖₂/‖want‖₂, or +Inf when got has a NaN or Inf
// (an unwritten, poisoned element) or the lengths differ. It also returns the
// index of the first non-finite element, or -1.
func RelError(got []float32, want []float64) (rel float64, badIndex int) {
	if len(got) != len(want) {
		return math.Inf(1), 0
	}
	var num, den float64
	for i, g := range got {
		gv := float64(g)
		if math.IsNaN(gv) || math.IsInf(gv, 0) {
			return math.Inf(1), i
		}
		d := gv - want[i]
		num += d * d
		den += want[i] * want[i]
	}
	if den == 0 {
		return math.Sqrt(num), -1
	}
	return math.Sqrt(num / den), -1
}
