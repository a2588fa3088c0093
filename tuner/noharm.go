package tuner

import (
	"fmt"

	"github.com/kerntune/kerntune/internal/stats"
)

// The no-harm rule: a class entry's parameters apply to every shape of the
// class, so the winner must not be slower than the un-tuned default on any
// of the entry's shapes beyond noise (FasterBeyondNoise: one-sided
// Mann-Whitney U, p < 0.01, and at least 3 % in median), judged on the
// per-shape samples of the final interleaved timing. The finalists are
// tried fastest over all shapes first; the first that harms no shape wins.
// The default harms none, so it is chosen when every finalist harms one:
// the entry then records why (Entry.NoHarm), and tuning the shapes one by
// one (tune --shape) gives each its own parameters. For an entry of one
// shape the rule changes nothing: a finalist faster in median than the
// default cannot be slower than it beyond noise.

// harm is a shape on which a candidate is slower than the default beyond noise.
type harm struct {
	shape  int
	slower float64 // median(candidate)/median(default) − 1 on that shape
	p      float64
}

// harmOf returns the shape on which cand's per-shape samples are slower than
// def's beyond noise, the worst one when there are several; ok is false
// when there is none. per[j][i] is sample j of shape i.
func harmOf(def, cand [][]float64, nshapes int) (h harm, ok bool) {
	for i := 0; i < nshapes; i++ {
		d, c := column(def, i), column(cand, i)
		if cmp := FasterBeyondNoise(d, c); cmp.Faster {
			slower := stats.Median(c)/stats.Median(d) - 1
			if !ok || slower > h.slower {
				h, ok = harm{shape: i, slower: slower, p: cmp.P}, true
			}
		}
	}
	return h, ok
}

// chooseNoHarm returns the first of sorted (fastest over the shapes first)
// that harms no shape, and a note when that is not sorted[0]. def is the
// default's timing, also in sorted; without it the rule cannot apply.
func chooseNoHarm(sorted []*timed, def *timed, shapes []string) (*timed, string) {
	if def == nil || def.err != nil || len(def.tot) == 0 {
		return sorted[0], ""
	}
	var first *timed
	var firstHarm harm
	for _, c := range sorted {
		h, harmed := harm{}, false
		if c != def {
			h, harmed = harmOf(def.per, c.per, len(shapes))
		}
		if !harmed {
			if first == nil {
				return c, ""
			}
			return c, noHarmNote(first, firstHarm, c, def, shapes)
		}
		if first == nil {
			first, firstHarm = c, h
		}
	}
	return sorted[0], "" // not reached: def is in sorted and harms nothing
}

func noHarmNote(rejected *timed, h harm, chosen, def *timed, shapes []string) string {
	gain := func(c *timed) float64 { return 100 * (1 - stats.Median(c.tot)/stats.Median(def.tot)) }
	s := fmt.Sprintf("%s was %.1f%% faster than the default over the shapes but %.1f%% slower on %s (Mann-Whitney p=%.2g); ",
		rejected.cand.Key(), gain(rejected), 100*h.slower, shapes[h.shape], h.p)
	if chosen == def {
		return s + "no re-timed candidate was as fast as the default on every shape, so the entry keeps the default " +
			"(tune the shapes one by one with --shape to give each its own parameters)"
	}
	return s + fmt.Sprintf("chose %s, %.1f%% faster than the default over the shapes and not slower on any", chosen.cand.Key(), gain(chosen))
}
