package search

// Targets with one optional ability each, beside the Measure of their
// MeasureFunc, for the driver's tests.

type withCalibrated struct {
	MeasureFunc
	calibrated func(perSample float64) float64
}

func (w withCalibrated) Calibrated(s float64) float64 { return w.calibrated(s) }

type withPlan struct {
	withCalibrated
	plan func(size int) int
}

func (w withPlan) Plan(n int) int { return w.plan(n) }

type withStop struct {
	MeasureFunc
	stop func(Request) string
}

func (w withStop) Stop(r Request) string { return w.stop(r) }

type withPrefetch struct {
	MeasureFunc
	prefetch func(fresh []Candidate)
}

func (w withPrefetch) Prefetch(fresh []Candidate) { w.prefetch(fresh) }

type withReady struct {
	MeasureFunc
	ready func(Candidate) bool
}

func (w withReady) Ready(c Candidate) bool { return w.ready(c) }
