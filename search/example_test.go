package search_test

import (
	"errors"
	"fmt"

	"github.com/kerntune/kerntune/search"
)

// A whole search without a device: Measure is where kerntune tune times a
// kernel and kerntune replay reads a recording; here it computes a made-up
// time from the parameters, so the search can be followed on paper.
func ExampleDriver() {
	// The space: a tile of BM x BN with at most 256 elements.
	space := search.Space{
		Params: []search.Param{
			{Name: "BM", Values: []int{16, 32, 64}},
			{Name: "BN", Values: []int{1, 2, 4, 8}},
		},
		Constraints: []search.Constraint{{
			Name: "BM*BN <= 256",
			Check: func(c search.Candidate) error {
				if c["BM"]*c["BN"] > 256 {
					return errors.New("tile too large")
				}
				return nil
			},
		}},
	}
	pool := space.Enumerate() // the 11 candidates that pass the constraint

	// The fake device: fastest at BM=32, BN=4; BM=16, BN=1 fails to build.
	// Real samples are noisy; these are exact, so the outcome is fixed.
	measure := func(c search.Candidate, n int) ([]float64, error) {
		fmt.Printf("measure %s x%d", c.Key(), n)
		if c["BM"] == 16 && c["BN"] == 1 {
			fmt.Println(": does not compile")
			return nil, errors.New("does not compile")
		}
		t := 1e-6 * float64(abs(c["BM"]-32)/16+abs(c["BN"]-4)+10)
		out := make([]float64, n)
		for i := range out {
			out[i] = t
		}
		fmt.Printf(": %.0f us\n", t*1e6)
		return out, nil
	}

	d := search.Driver{
		Strategy: "exhaustive",                        // every candidate; "bo" is the default
		Options:  search.Options{Samples: 3},          // samples per candidate
		Pool:     pool,                                // what the search may measure
		Default:  search.Candidate{"BM": 64, "BN": 1}, // measured first, always competes
		Target:   search.MeasureFunc(measure),
	}
	out, err := d.Run()
	if err != nil {
		fmt.Println(err) // an unknown strategy or an empty pool
		return
	}
	fmt.Println("best:", out.Best.Key(), "of", len(pool), "candidates,", out.Evals, "measured")
	fmt.Printf("calibration: %.0f us per sample\n", out.PerSample*1e6)
	fmt.Printf("stopped early: %q\n", out.Stopped)
	// The default first, alone: its samples calibrate the budget (Calibrator).
	// Then the strategy's requests, the default again among them; a failure
	// is only recorded and the search goes on.

	// Output:
	// measure BM=64,BN=1 x3: 15 us
	// measure BM=64,BN=1 x3: 15 us
	// measure BM=16,BN=1 x3: does not compile
	// measure BM=16,BN=2 x3: 13 us
	// measure BM=16,BN=4 x3: 11 us
	// measure BM=16,BN=8 x3: 15 us
	// measure BM=32,BN=1 x3: 13 us
	// measure BM=32,BN=2 x3: 12 us
	// measure BM=32,BN=4 x3: 10 us
	// measure BM=32,BN=8 x3: 14 us
	// measure BM=64,BN=2 x3: 14 us
	// measure BM=64,BN=4 x3: 12 us
	// best: BM=32,BN=4 of 11 candidates, 11 measured
	// calibration: 15 us per sample
	// stopped early: ""
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
