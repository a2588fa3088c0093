package tuner

import (
	"math/rand/v2"
	"strconv"

	"github.com/kerntune/kerntune/search"
)

// Coverage is a covering sample of a space's valid candidates.
type Coverage struct {
	Sample []search.Candidate
	// Values counts the (parameter, value) pairs that some valid
	// candidate takes; the sample takes every one of them.
	Values int
	// Uncoverable lists "NAME=value" pairs of the space that no valid
	// candidate takes (device limits or constraints exclude them).
	Uncoverable []string
}

// CoveringSample picks a small subset of cands in which every value of
// every parameter that any candidate in cands takes appears at least once:
// greedily the candidate adding the most uncovered values, ties broken by a
// shuffle seeded with seed, so the sample is reproducible and a different
// seed exercises different combinations. Verifying the sample runs every
// value of every tuning parameter through the kernel body when verifying
// every candidate is too slow.
func CoveringSample(params []search.Param, cands []search.Candidate, seed uint64) Coverage {
	type pv struct {
		name string
		val  int
	}
	order := make([]int, len(cands))
	for i := range order {
		order[i] = i
	}
	rng := rand.New(rand.NewPCG(seed, 0x6b74636f766572))
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })

	uncovered := map[pv]bool{}
	for _, c := range cands {
		for _, p := range params {
			if v, ok := c[p.Name]; ok {
				uncovered[pv{p.Name, v}] = true
			}
		}
	}
	cov := Coverage{Values: len(uncovered)}
	for _, p := range params {
		for _, v := range p.Values {
			if !uncovered[pv{p.Name, v}] {
				cov.Uncoverable = append(cov.Uncoverable, p.Name+"="+strconv.Itoa(v))
			}
		}
	}
	taken := make([]bool, len(cands))
	for len(uncovered) > 0 {
		best, bestGain := -1, 0
		for _, i := range order {
			if taken[i] {
				continue
			}
			gain := 0
			for _, p := range params {
				if v, ok := cands[i][p.Name]; ok && uncovered[pv{p.Name, v}] {
					gain++
				}
			}
			if gain > bestGain {
				best, bestGain = i, gain
			}
		}
		if best < 0 {
			break
		}
		taken[best] = true
		cov.Sample = append(cov.Sample, cands[best])
		for _, p := range params {
			delete(uncovered, pv{p.Name, cands[best][p.Name]})
		}
	}
	return cov
}
