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
	return t.TimeGroupsAhead(n, 1, launch)
}

// TimeGroupsAhead is TimeLaunchesAhead over n groups of per launches each:
// an event before the first launch and after every group, nothing between
// the launches of a group, so they run back to back as an application
// issues them. Each returned time is a group's GPU time divided by per
// (milliseconds per launch); launch is called with i in [0, n·per).
func (t *Thread) TimeGroupsAhead(n, per int, launch func(t *Thread, i int) error) ([]float64, bool, error) {
	if per < 1 {
		return nil, false, fmt.Errorf("cudadrv: %d launches per timed group", per)
	}
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
	for g := 0; g < n; g++ {
		for j := 0; j < per; j++ {
			i := g*per + j
			if err := launch(t, i); err != nil {
				return nil, false, fmt.Errorf("timed launch %d of %d: %w", i, n*per, err)
			}
		}
		if err := t.record(ev[g+1]); err != nil {
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
	for g := range out {
		ms, err := t.elapsed(ev[g], ev[g+1])
		if err != nil {
			return nil, false, err
		}
		out[g] = ms / float64(per)
	}
	return out, ahead, nil
}

// Graph is a captured CUDA graph of Per launches, instantiated on a
// context thread; DestroyGraph releases it.
type Graph struct {
	Per         int
	graph, exec uintptr
}

// HasGraphs reports whether the driver has the CUDA graph API (CUDA ≥ 11.4).
func (t *Thread) HasGraphs() bool {
	cu := &t.lib.cu
	return cu.cuStreamBeginCapture != nil && cu.cuStreamEndCapture != nil && cu.cuGraphInstantiateWithFlags != nil &&
		cu.cuGraphLaunch != nil && cu.cuGraphExecDestroy != nil && cu.cuGraphDestroy != nil
}

// CaptureGraph captures per launches (launch(t, i), i in [0, per)) on the
// context's stream into a graph and instantiates it.
func (t *Thread) CaptureGraph(per int, launch func(t *Thread, i int) error) (*Graph, error) {
	if !t.HasGraphs() {
		return nil, errors.New("cudadrv: this driver has no CUDA graph API (cuStreamBeginCapture_v2 … cuGraphInstantiateWithFlags)")
	}
	if per < 1 {
		return nil, fmt.Errorf("cudadrv: %d launches per graph", per)
	}
	if err := t.ready(); err != nil {
		return nil, err
	}
	cu := &t.lib.cu
	const captureThreadLocal = 1 // CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
	if err := t.check("cuStreamBeginCapture_v2", cu.cuStreamBeginCapture(t.stream, captureThreadLocal), ""); err != nil {
		return nil, err
	}
	var launchErr error
	for i := 0; i < per && launchErr == nil; i++ {
		if err := launch(t, i); err != nil {
			launchErr = fmt.Errorf("captured launch %d of %d: %w", i, per, err)
		}
	}
	g := &Graph{Per: per}
	endErr := t.check("cuStreamEndCapture", cu.cuStreamEndCapture(t.stream, &g.graph), "")
	if launchErr == nil && endErr == nil {
		endErr = t.check("cuGraphInstantiateWithFlags", cu.cuGraphInstantiateWithFlags(&g.exec, g.graph, 0), "")
	}
	if launchErr != nil || endErr != nil {
		t.DestroyGraph(g)
		return nil, errors.Join(launchErr, endErr)
	}
	return g, nil
}

// DestroyGraph releases a graph of CaptureGraph; nil is a no-op.
func (t *Thread) DestroyGraph(g *Graph) error {
	if g == nil {
		return nil
	}
	var errs []error
	if g.exec != 0 {
		errs = append(errs, t.check("cuGraphExecDestroy", t.lib.cu.cuGraphExecDestroy(g.exec), ""))
	}
	if g.graph != 0 {
		errs = append(errs, t.check("cuGraphDestroy", t.lib.cu.cuGraphDestroy(g.graph), ""))
	}
	g.exec, g.graph = 0, 0
	return errors.Join(errs...)
}

// TimeReplays times n replays of g, one event after each, after one
// replay that is not timed (the graph's upload); each returned time is a
// replay's GPU time divided by g.Per (milliseconds per launch). The
// launches of a replay run back to back on the GPU, as an application
// that replays a captured step runs them.
func (t *Thread) TimeReplays(g *Graph, n int) ([]float64, error) {
	if g == nil || g.exec == 0 {
		return nil, errors.New("cudadrv: replay of a destroyed graph")
	}
	if err := t.beginTiming(n); err != nil {
		return nil, err
	}
	defer func() { t.timing = false }()
	cu := &t.lib.cu
	ev, err := t.eventPool(n + 1)
	if err != nil {
		return nil, err
	}
	if err := t.check("cuGraphLaunch", cu.cuGraphLaunch(g.exec, t.stream), ""); err != nil {
		return nil, err
	}
	if err := t.record(ev[0]); err != nil {
		return nil, err
	}
	for r := 0; r < n; r++ {
		if err := t.check("cuGraphLaunch", cu.cuGraphLaunch(g.exec, t.stream), ""); err != nil {
			return nil, err
		}
		if err := t.record(ev[r+1]); err != nil {
			return nil, err
		}
	}
	if err := t.check("cuEventSynchronize", cu.cuEventSynchronize(ev[n]), ""); err != nil {
		return nil, err
	}
	out := make([]float64, n)
	for r := range out {
		ms, err := t.elapsed(ev[r], ev[r+1])
		if err != nil {
			return nil, err
		}
		out[r] = ms / float64(g.Per)
	}
	return out, nil
}

// TimeGraph captures per launches into a graph, times n replays of it
// (TimeReplays) and releases it.
func (t *Thread) TimeGraph(n, per int, launch func(t *Thread, i int) error) (_ []float64, err error) {
	g, err := t.CaptureGraph(per, launch)
	if err != nil {
		return nil, err
	}
	defer func() {
		if derr := t.DestroyGraph(g); err == nil {
			err = derr
		}
	}()
	return t.TimeReplays(g, n)
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
