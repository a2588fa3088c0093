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
