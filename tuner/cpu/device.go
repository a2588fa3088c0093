package cpu

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kerntune/kerntune/internal/stats"
)

// lastLevelCache reads the largest cache size Linux reports, else assumes 32 MiB.
func lastLevelCache() int64 {
	best := int64(0)
	for i := 0; i < 8; i++ {
		b, err := os.ReadFile("/sys/devices/system/cpu/cpu0/cache/index" + strconv.Itoa(i) + "/size")
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(b))
		mult := int64(1)
		switch {
		case strings.HasSuffix(s, "K"):
			mult, s = 1<<10, strings.TrimSuffix(s, "K")
		case strings.HasSuffix(s, "M"):
			mult, s = 1<<20, strings.TrimSuffix(s, "M")
		}
		if v, err := strconv.ParseInt(s, 10, 64); err == nil && v*mult > best {
			best = v * mult
		}
	}
	if best == 0 {
		best = 32 << 20
	}
	return best
}

// machineBandwidth is copyBandwidth of this machine, measured once a
// process: it is a fact of the machine, and each measurement allocates
// hundreds of MiB (a process that opens the backend many times, as the
// command tests do in parallel, held gigabytes).
var machineBandwidth = sync.OnceValue(func() float64 { return copyBandwidth(lastLevelCache()) })

// copyBandwidth measures read+write GB/s of copying a buffer twice the
// last-level cache (at least 64 MiB, at most 256 MiB: source and
// destination together then exceed any cache a core reaches), split over
// all cores; the median of several copies.
func copyBandwidth(llc int64) float64 {
	n := int(min(max(2*llc, 64<<20), 256<<20)) / 4
	src, dst := make([]float32, n), make([]float32, n)
	for i := range src {
		src[i] = float32(i)
	}
	workers := runtime.NumCPU()
	chunk := (n + workers - 1) / workers
	var samples []float64
	for rep := 0; rep < 7; rep++ {
		start := time.Now()
		var wg sync.WaitGroup
		for lo := 0; lo < n; lo += chunk {
			hi := min(lo+chunk, n)
			wg.Add(1)
			go func() {
				defer wg.Done()
				copy(dst[lo:hi], src[lo:hi])
			}()
		}
		wg.Wait()
		if rep > 0 { // the first copy faults the pages in
			samples = append(samples, 8*float64(n)/time.Since(start).Seconds()/1e9)
		}
	}
	return float64(int(stats.Median(samples)*10)) / 10
}
