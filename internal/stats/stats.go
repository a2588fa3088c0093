package stats

import (
	"math"
	"sort"

	"gonum.org/v1/gonum/stat"
)

// Median returns the textbook median: the middle value of the sorted data,
// or the mean of the two middle values for an even count; NaN for no data.
// gonum's stat.Quantile(0.5, ...) returns the lower middle value instead.
func Median(xs []float64) float64 {
	n := len(xs)
	if n == 0 {
		return math.NaN()
	}
	s := sorted(xs)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func sorted(xs []float64) []float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s
}

// Summary describes a set of samples.
type Summary struct {
	Count  int
	Median float64
	IQR    float64 // Q3 − Q1, linearly interpolated quartiles
	Min    float64
	Max    float64
	Mean   float64
	CV     float64 // standard deviation / mean
}

// Summarize computes the Summary of xs (which it does not modify).
func Summarize(xs []float64) Summary {
	if len(xs) == 0 {
		nan := math.NaN()
		return Summary{Median: nan, IQR: nan, Min: nan, Max: nan, Mean: nan, CV: nan}
	}
	s := sorted(xs)
	mean, std := stat.MeanStdDev(s, nil)
	sum := Summary{
		Count:  len(s),
		Median: Median(s),
		Min:    s[0],
		Max:    s[len(s)-1],
		Mean:   mean,
	}
	if len(s) > 1 {
		sum.IQR = stat.Quantile(0.75, stat.LinInterp, s, nil) - stat.Quantile(0.25, stat.LinInterp, s, nil)
		if mean != 0 {
			sum.CV = std / mean
		}
	}
	return sum
}
