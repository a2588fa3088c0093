package tuner

import (
	"time"

	"github.com/kerntune/kerntune/internal/compilecache"
	"github.com/kerntune/kerntune/params/paramfile"
	"github.com/kerntune/kerntune/tuner/device"
)

// Where the time of tuning one entry goes (paramfile.TuneTime). The phases are
// disjoint and, with "other", add up to the entry's wall time:
//
//   - setup: from the start of Tuner.Run to the start of the search
//     (space, inputs, reference, loading);
//   - compile: waiting in Backend.Build (a compile the backend's pool
//     finished ahead, while the device worked, costs nothing here);
//   - verify: live.verify, i.e. Program.Output on every verification shape
//     and the comparison with the reference;
//   - measure: Program.Run, i.e. warm-up runs and timed samples, in the
//     search and in the final timing;
//   - search: the search driver and the strategy, i.e. the search's wall
//     time less the time spent answering its requests;
//   - journal: appending measurements to the journal and syncing it;
//   - other: the rest (logging, progress events, bookkeeping).
//
// Device time is the wall time of the calls that make the device run the
// entry's kernels: Program.Run (timed samples and warm-up runs) and
// Program.Output (verification runs). It counts a call from its start to
// its return, so it includes launch overhead and, for Output, the copy of
// the output back to the host; it is the time during which the tuner keeps
// the device occupied, and everything else (compiling, comparing on the
// host, choosing the next candidate, setting up) is time the device waits.
type phase int

const (
	phaseCompile phase = iota
	phaseVerify
	phaseMeasure
	nPhases
)

// clock accumulates an entry's time by phase. Its methods do nothing on a
// nil clock (runs that are not tuning an entry: verify, bench).
type clock struct {
	start   time.Time
	setup   time.Duration
	search  time.Duration
	journal time.Duration
	phases  [nPhases]time.Duration
	device  time.Duration
	// answering is the time spent in the search's Measure callback, which
	// is not the search's own time.
	answering time.Duration
	// cache reads the backend's compile-cache counters (nil: no cache);
	// cache0 is what they were when the entry started.
	cache  func() compilecache.Stats
	cache0 compilecache.Stats
	// build reads the backend's compile seconds (nil: it does not say);
	// build0 is what they were when the entry started.
	build  func() float64
	build0 float64
}

// watchCache makes the entry's result count the kernels b loaded from its
// compile cache and those it compiled while the entry ran.
func (c *clock) watchCache(b device.Backend) {
	if r, ok := b.(device.CacheReporter); ok && c != nil {
		c.cache = r.CacheStats
		c.cache0 = r.CacheStats()
	}
	if bt, ok := b.(device.BuildTimer); ok && c != nil {
		c.build = bt.BuildSeconds
		c.build0 = bt.BuildSeconds()
	}
}

// buildSeconds is the backend's compile seconds since the entry started
// (0 when it does not say).
func (c *clock) buildSeconds() float64 {
	if c == nil || c.build == nil {
		return 0
	}
	return round3(max(0, c.build()-c.build0))
}

func newClock(start time.Time) *clock { return &clock{start: start} }

// add charges the time since t0 to phase p and returns it.
func (c *clock) add(p phase, t0 time.Time) time.Duration {
	if c == nil {
		return 0
	}
	d := time.Since(t0)
	c.phases[p] += d
	return d
}

// onDevice charges the time since t0 to phase p and to the device.
func (c *clock) onDevice(p phase, t0 time.Time) {
	if c != nil {
		c.device += c.add(p, t0)
	}
}

// deviceOnly charges the time since t0 to the device alone (a verification
// run: the verify phase is charged by its caller).
func (c *clock) deviceOnly(t0 time.Time) {
	if c != nil {
		c.device += time.Since(t0)
	}
}

// split is the phases' totals so far, for charging a span of work (one
// measurement) to a candidate.
type split [nPhases]time.Duration

func (c *clock) split() split {
	if c == nil {
		return split{}
	}
	return split(c.phases)
}

// since is what each phase gained after s.
func (c *clock) since(s split) split {
	var d split
	if c == nil {
		return d
	}
	for i := range d {
		d[i] = c.phases[i] - s[i]
	}
	return d
}

// answered takes the time since t0, spent on a request of the search, out
// of the search's own time.
func (c *clock) answered(t0 time.Time) {
	if c != nil {
		c.answering += time.Since(t0)
	}
}

// journaled charges the time since t0 to the journal.
func (c *clock) journaled(t0 time.Time) {
	if c != nil {
		c.journal += time.Since(t0)
	}
}

// since is what each phase of s gained over s0.
func (s split) since(s0 split) split {
	for i := range s {
		s[i] -= s0[i]
	}
	return s
}

// seconds of one phase of a split.
func (s split) seconds(p phase) float64 { return s[p].Seconds() }

// result is the entry's paramfile.TuneTime at the end of its run.
func (c *clock) result() *paramfile.TuneTime {
	wall := time.Since(c.start)
	accounted := c.setup + c.search + c.journal
	for _, d := range c.phases {
		accounted += d
	}
	t := &paramfile.TuneTime{
		WallS:    round3(wall.Seconds()),
		SetupS:   round3(c.setup.Seconds()),
		CompileS: round3(c.phases[phaseCompile].Seconds()),
		VerifyS:  round3(c.phases[phaseVerify].Seconds()),
		MeasureS: round3(c.phases[phaseMeasure].Seconds()),
		SearchS:  round3(c.search.Seconds()),
		JournalS: round3(c.journal.Seconds()),
		OtherS:   round3(max(0, wall-accounted).Seconds()),
		DeviceS:  round3(c.device.Seconds()),
		IdleS:    round3(max(0, wall-c.device).Seconds()),
	}
	if wall > 0 {
		t.BusyPct = round3(min(100, 100*c.device.Seconds()/wall.Seconds()))
	}
	if c.cache != nil {
		s := c.cache()
		t.CacheHits = int(max(0, s.Hits-c.cache0.Hits))
		t.Compiled = int(max(0, s.Misses-c.cache0.Misses))
	}
	return t
}
