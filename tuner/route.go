package tuner

import (
	"github.com/kerntune/kerntune/internal/stats"
)

// Values of paramfile.Entry.Use.
const (
	UseBaseline = "baseline" // the baseline beat the winner beyond noise: call the vendor library
	UseTuned    = "tuned"    // a baseline was timed and did not
)

// The rule "faster beyond noise", used to route an entry to its baseline
// and to decide whether a re-run's winner beats the entry already in the file.
const (
	// NoiseAlpha is the largest one-sided Mann-Whitney U p-value that
	// counts as a real difference.
	NoiseAlpha = 0.01
	// NoiseMinGain is the smallest relative gain in median that counts:
	// a difference smaller than this is not worth a change even when it is
	// significant.
	NoiseMinGain = 0.03
)

// Comparison is the outcome of FasterBeyondNoise.
type Comparison struct {
	Faster bool    // both conditions hold
	P      float64 // one-sided Mann-Whitney U p-value of "fast tends to be smaller than slow"
	Gain   float64 // 1 - median(fast)/median(slow): the share of slow's median saved
}

// FasterBeyondNoise reports whether the samples fast are faster than the
// samples slow beyond timing noise: a one-sided Mann-Whitney U test at
// p < NoiseAlpha and a median at least NoiseMinGain (3 %) below slow's.
// Samples of the same unit (seconds) from interleaved rounds are expected;
// empty samples are never faster.
func FasterBeyondNoise(fast, slow []float64) Comparison {
	if len(fast) == 0 || len(slow) == 0 {
		return Comparison{P: 1}
	}
	c := Comparison{P: stats.MannWhitneyU(fast, slow).PLess}
	if ms := stats.Median(slow); ms > 0 {
		c.Gain = 1 - stats.Median(fast)/ms
	}
	c.Faster = c.P < NoiseAlpha && c.Gain >= NoiseMinGain
	return c
}

// UseOf is the entry's use: UseBaseline when the baseline's samples are
// faster than the winner's beyond noise, UseTuned when a baseline was timed
// and is not, and "" when there are no baseline samples.
func UseOf(winner, baseline []float64) string {
	switch {
	case len(baseline) == 0:
		return ""
	case FasterBeyondNoise(baseline, winner).Faster:
		return UseBaseline
	}
	return UseTuned
}
