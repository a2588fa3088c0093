package cpu

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// kernParallel runs fn(worker, task) for every task in [0, ntasks) on up to
// threads goroutines. Tasks are handed out through a shared atomic counter so
// that uneven tasks balance; worker (in [0, min(threads, ntasks))) lets a
// caller index per-goroutine scratch. With one thread or one task it runs
// inline, so Threads=1 pays no goroutine cost.
func kernParallel(threads, ntasks int, fn func(worker, task int)) {
	if ntasks <= 0 {
		return
	}
	if threads > ntasks {
		threads = ntasks
	}
	if threads <= 1 {
		for t := 0; t < ntasks; t++ {
			fn(0, t)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	wg.Add(threads)
	for w := 0; w < threads; w++ {
		go func(w int) {
			defer wg.Done()
			for {
				t := int(next.Add(1) - 1)
				if t >= ntasks {
					return
				}
				fn(w, t)
			}
		}(w)
	}
	wg.Wait()
}

// kernWorkers is the number of goroutines kernParallel will start.
func kernWorkers(threads, ntasks int) int {
	if threads > ntasks {
		threads = ntasks
	}
	if threads < 1 {
		threads = 1
	}
	return threads
}

// kernF32Pool recycles scratch buffers (packed panels, f32 accumulators for
// the half kernels) so that repeated timed calls do not allocate.
var kernF32Pool sync.Pool

// kernGetF32 returns a scratch slice of length n; its contents are undefined.
func kernGetF32(n int) *[]float32 {
	if p, ok := kernF32Pool.Get().(*[]float32); ok {
		if cap(*p) >= n {
			*p = (*p)[:n]
			return p
		}
		// Too small for this call: dropped, so that the buffer made here
		// takes its place. Put back, it would be the one handed out next
		// time too, and every call of this size would allocate.
	}
	s := make([]float32, n)
	return &s
}

func kernPutF32(p *[]float32) { kernF32Pool.Put(p) }

// kernCheckLen panics with a clear message when a slice is shorter than the
// shape needs; the kernels index with unchecked arithmetic after this.
func kernCheckLen(fn, name string, got, want int) {
	if got < want {
		panic(fmt.Sprintf("cpu.%s: len(%s) = %d, need at least %d", fn, name, got, want))
	}
}

// kernCheckDims rejects negative sizes.
func kernCheckDims(fn string, dims ...int) {
	for _, d := range dims {
		if d < 0 {
			panic(fmt.Sprintf("cpu.%s: negative dimension %d", fn, d))
		}
	}
}

func kernRoundUp(x, m int) int { return (x + m - 1) / m * m }
