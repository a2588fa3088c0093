package cover

import (
	"math/rand/v2"
	"os"
	"strconv"

	"github.com/kerntune/kerntune/search"
)

// The strengths of a cover.
const (
	// Values: every (parameter, value) that a valid candidate takes.
	Values = 1
	// Pairs: also every two (parameter, value)s of different parameters
	// that a valid candidate takes together, e.g. MMA=1 with each BK.
	Pairs = 2
)

// Coverage is a covering sample of a space's valid candidates.
type Coverage struct {
	Sample []search.Candidate
	// Items counts what the sample covers, which is everything the valid
	// candidates take: (parameter, value)s, and at strength 2 their pairs.
	Items int
	// Uncoverable lists "NAME=value" of the space that no valid candidate
	// takes (device limits or constraints exclude them).
	Uncoverable []string
}

// items numbers what candidates take: value v of params[i] is id(i, v) in
// 0..n-1, the pair of ids a < b is n + a·n + b.
type items struct {
	params []search.Param
	ids    []map[int]int
	n      int
}

func newItems(params []search.Param) *items {
	it := &items{params: params, ids: make([]map[int]int, len(params))}
	for i, p := range params {
		it.ids[i] = map[int]int{}
		for _, v := range p.Values {
			if _, ok := it.ids[i][v]; !ok {
				it.ids[i][v] = it.n
				it.n++
			}
		}
	}
	return it
}

// of appends to dst the items c takes at strength s. A parameter c lacks,
// or a value outside the parameter's list, takes nothing.
func (it *items) of(dst []int, c search.Candidate, s int) []int {
	dst = dst[:0]
	for i, p := range it.params {
		v, ok := c[p.Name]
		if !ok {
			continue
		}
		if id, ok := it.ids[i][v]; ok {
			dst = append(dst, id)
		}
	}
	if s < Pairs {
		return dst
	}
	singles := len(dst)
	for a := 0; a < singles; a++ {
		for b := a + 1; b < singles; b++ {
			dst = append(dst, it.n+dst[a]*it.n+dst[b])
		}
	}
	return dst
}

// Sample picks a subset of cands that takes every item of strength s
// (Values or Pairs) that some candidate in cands takes: greedily the
// candidate that adds the most items not yet taken, ties broken by a
// shuffle seeded with seed, so the sample is reproducible and another seed
// exercises other combinations.
func Sample(params []search.Param, cands []search.Candidate, seed uint64, s int) Coverage {
	it := newItems(params)
	order := make([]int, len(cands))
	for i := range order {
		order[i] = i
	}
	rng := rand.New(rand.NewPCG(seed, 0x6b74636f766572))
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })

	// open[id]: some candidate takes item id and the sample does not yet.
	taken := make([][]int, len(cands))
	open, left := make([]bool, it.n+it.n*it.n), 0
	for i, c := range cands {
		taken[i] = it.of(nil, c, s)
		for _, id := range taken[i] {
			if !open[id] {
				open[id] = true
				left++
			}
		}
	}
	cov := Coverage{Items: left}
	for i, p := range params {
		for _, v := range p.Values {
			if !open[it.ids[i][v]] {
				cov.Uncoverable = append(cov.Uncoverable, p.Name+"="+strconv.Itoa(v))
			}
		}
	}
	picked := make([]bool, len(cands))
	for left > 0 {
		best, bestGain := -1, 0
		for _, i := range order {
			if picked[i] {
				continue
			}
			gain := 0
			for _, id := range taken[i] {
				if open[id] {
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
		picked[best] = true
		cov.Sample = append(cov.Sample, cands[best])
		for _, id := range taken[best] {
			if open[id] {
				open[id] = false
				left--
			}
		}
	}
	return cov
}

// Missing returns what cands take at strength s and sample does not, as
// "NAME=value" or "NAME=value,NAME=value"; none for a cover. A test that
// shrinks a sweep to a sample asserts it with this.
func Missing(params []search.Param, cands, sample []search.Candidate, s int) []string {
	it := newItems(params)
	have := map[int]bool{}
	var buf []int
	for _, c := range sample {
		buf = it.of(buf, c, s)
		for _, id := range buf {
			have[id] = true
		}
	}
	var out []string
	seen := map[int]bool{}
	for _, c := range cands {
		buf = it.of(buf, c, s)
		for _, id := range buf {
			if !have[id] && !seen[id] {
				seen[id] = true
				out = append(out, it.name(id))
			}
		}
	}
	return out
}

// name spells an item as "NAME=value" or "NAME=value,NAME=value".
func (it *items) name(id int) string {
	single := func(id int) string {
		for i, p := range it.params {
			for v, x := range it.ids[i] {
				if x == id {
					return p.Name + "=" + strconv.Itoa(v)
				}
			}
		}
		return "?"
	}
	if id < it.n {
		return single(id)
	}
	id -= it.n
	return single(id/it.n) + "," + single(id%it.n)
}

// FullEnv names the switch of the whole sweeps: with KTDEV_FULL set
// (`make test-full`), the checks that otherwise run a covering sample
// check every candidate.
const FullEnv = "KTDEV_FULL"

// Full reports whether $KTDEV_FULL asks for every candidate.
func Full() bool { return os.Getenv(FullEnv) != "" }
