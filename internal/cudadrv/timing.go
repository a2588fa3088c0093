package cudadrv

import (
	"errors"
	"fmt"
)

var errNestedTiming = errors.New("cudadrv: timing calls cannot be nested")

// eventPool returns n timing events, creating more as needed. Events are
// kept for the life of the context.
func (t *Thread) eventPool(n int) ([]uintptr, error) {
	for len(t.events) < n {
		var e uintptr
		if err := t.check("cuEventCreate", t.lib.cu.cuEventCreate(&e, cuEventDefault), ""); err != nil {
			return nil, err
		}
		t.events = append(t.events, e)
	}
	return t.events[:n], nil
}

func (t *Thread) record(e uintptr) error {
	return t.check("cuEventRecord", t.lib.cu.cuEventRecord(e, t.stream), "")
}

func (t *Thread) elapsed(a, b uintptr) (float64, error) {
	var ms float32
	if err := t.check(t.lib.elapsedSym, t.lib.cu.cuEventElapsedTime(&ms, a, b), ""); err != nil {
		return 0, err
	}
	return float64(ms), nil
}

func (t *Thread) beginTiming(n int) error {
	if err := t.ready(); err != nil {
		return err
	}
	if t.timing {
		return errNestedTiming
	}
	if n < 0 {
		return fmt.Errorf("cudadrv: timing %d launches", n)
	}
	t.timing = true
	return nil
}

// TimeLaunches calls launch(t, i) for i in [0, n) with an event recorded on
// the context's stream before the first call and after every call, waits
// once at the end and returns the GPU time of each call in milliseconds
// (event resolution is about 0.5 µs). launch may issue any number of
// kernels or cuBLAS calls on t. An error from launch (wrapped with its
// index) or from the driver aborts the measurement.
func (t *Thread) TimeLaunches(n int, launch func(t *Thread, i int) error) ([]float64, error) {
	ms, _, err := t.TimeLaunchesAhead(n, launch)
	return ms, err
}

// TimeLaunchesAhead is TimeLaunches that also reports whether the host
// queued every launch before the GPU reached the first event: true when that
// event had not completed once the last launch was queued. Behind a kernel
// that holds the GPU (a spin), true means the GPU ran the launches back to
// back and each interval is GPU time; false means the GPU may have waited
// for the host between launches (a host slowed down, e.g. by compiles on
// every core), and the intervals may include that wait.
func (t *Thread) TimeLaunchesAhead(n int, launch func(t *Thread, i int) error) ([]float64, bool, error) {
	if err := t.beginTiming(n); err != nil {
		return nil, false, err
	}
	defer func() { t.timing = false }()
	if n == 0 {
		return []float64{}, true, nil
	}
	ev, err := t.eventPool(n + 1)
	if err != nil {
		return nil, false, err
	}
	if err := t.record(ev[0]); err != nil {
		return nil, false, err
	}
	for i := 0; i < n; i++ {
		if err := launch(t, i); err != nil {
			return nil, false, fmt.Errorf("timed launch %d of %d: %w", i, n, err)
		}
		if err := t.record(ev[i+1]); err != nil {
			return nil, false, err
		}
	}
	ahead := false
	switch r := t.lib.cu.cuEventQuery(ev[0]); r {
	case cudaErrorNotReady:
		ahead = true
	default:
		if err := t.check("cuEventQuery", r, ""); err != nil {
			return nil, false, err
		}
	}
	if err := t.check("cuEventSynchronize", t.lib.cu.cuEventSynchronize(ev[n]), ""); err != nil {
		return nil, false, err
	}
	out := make([]float64, n)
	for i := range out {
		if out[i], err = t.elapsed(ev[i], ev[i+1]); err != nil {
			return nil, false, err
		}
	}
	return out, ahead, nil
}

// TimeBatch calls launch(t, i) for i in [0, n) between one pair of events
// and returns the total GPU time in milliseconds (divide by n for the mean;
// back-to-back launches hide the per-launch gaps TimeLaunches includes).
func (t *Thread) TimeBatch(n int, launch func(t *Thread, i int) error) (float64, error) {
	if err := t.beginTiming(n); err != nil {
		return 0, err
	}
	defer func() { t.timing = false }()
	ev, err := t.eventPool(2)
	if err != nil {
		return 0, err
	}
	if err := t.record(ev[0]); err != nil {
		return 0, err
	}
	for i := 0; i < n; i++ {
		if err := launch(t, i); err != nil {
			return 0, fmt.Errorf("timed launch %d of %d: %w", i, n, err)
		}
	}
	if err := t.record(ev[1]); err != nil {
		return 0, err
	}
	if err := t.check("cuEventSynchronize", t.lib.cu.cuEventSynchronize(ev[1]), ""); err != nil {
		return 0, err
	}
	return t.elapsed(ev[0], ev[1])
}

// Time runs body between two events and returns the GPU time in
// milliseconds of the work it issued on the context's stream.
func (t *Thread) Time(body func(t *Thread) error) (float64, error) {
	return t.TimeBatch(1, func(t *Thread, _ int) error { return body(t) })
}

// TimeLaunches runs Thread.TimeLaunches on the context thread.
func (c *Context) TimeLaunches(n int, launch func(t *Thread, i int) error) (ms []float64, err error) {
	err = c.Do(func(t *Thread) (e error) { ms, e = t.TimeLaunches(n, launch); return })
	return
}

// TimeBatch runs Thread.TimeBatch on the context thread.
func (c *Context) TimeBatch(n int, launch func(t *Thread, i int) error) (ms float64, err error) {
	err = c.Do(func(t *Thread) (e error) { ms, e = t.TimeBatch(n, launch); return })
	return
}

// Time runs Thread.Time on the context thread.
func (c *Context) Time(body func(t *Thread) error) (ms float64, err error) {
	err = c.Do(func(t *Thread) (e error) { ms, e = t.Time(body); return })
	return
}
