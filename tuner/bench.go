package tuner

import (
	"context"
	"fmt"

	"github.com/kerntune/kerntune/internal/stats"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params/paramfile"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/device"
)

// BenchResult compares one candidate with the backend's baseline on one case.
type BenchResult struct {
	Kernel   string
	DType    kernels.DType
	Case     kernels.Case
	Params   search.Candidate
	MedianUS float64
	IQRUS    float64
	Samples  int
	Baseline string  // name, or "" when the backend has none
	BaseUS   float64 // baseline median
	Roofline *paramfile.RooflineSummary
	// Against is the other candidate BenchAgainst timed in the same
	// rounds, AgainstUS its median: the same key as Params is the same
	// kernel, timed once, and AgainstUS is MedianUS.
	Against   search.Candidate
	AgainstUS float64
}

// Bench verifies c on the family's odd shapes and on the case, then times it
// and the baseline interleaved, samples each, after a warmup.
func (t *Tuner) Bench(ctx context.Context, k *kernels.Kernel, dt kernels.DType, c kernels.Case, cand search.Candidate, samples int) (*BenchResult, error) {
	return t.bench(ctx, k, dt, c, cand, nil, samples)
}

// BenchAgainst is Bench with a second candidate, verified as the first and
// timed in the same rounds of ten samples, in turn with it and the
// baseline (the order alternating from round to round): two params files'
// choices for a case compared under the same load, which timing each in
// its own run cannot give on a shared machine.
func (t *Tuner) BenchAgainst(ctx context.Context, k *kernels.Kernel, dt kernels.DType, c kernels.Case, cand, other search.Candidate, samples int) (*BenchResult, error) {
	if other == nil {
		return nil, fmt.Errorf("%s %s: no candidate to bench against", k.Name, c)
	}
	return t.bench(ctx, k, dt, c, cand, other, samples)
}

func (t *Tuner) bench(ctx context.Context, k *kernels.Kernel, dt kernels.DType, c kernels.Case, cand, other search.Candidate, samples int) (*BenchResult, error) {
	task := Task{Kernel: k, DType: dt, Cases: []kernels.Case{c}}
	m := newLive(t, task, nil)
	defer m.close()
	space, err := t.Space(task)
	if err != nil {
		return nil, err
	}
	same := other != nil && other.Key() == cand.Key()
	if same {
		other = nil // the same kernel: timed once
	}
	cands := []search.Candidate{cand}
	if other != nil {
		cands = append(cands, other)
	}
	for _, cd := range cands {
		if err := space.Check(cd); err != nil {
			return nil, fmt.Errorf("%s %s: parameters %s are not valid here: %w", k.Name, c, cd.Key(), err)
		}
	}
	if err := m.load(); err != nil {
		return nil, err
	}
	// Each verified, warmed up and sampled once before the timed rounds.
	var progs []device.Program
	for _, cd := range cands {
		if _, err := (&measurement{live: m, progress: newProgress(t, m, 0)}).measure(cd, 1); err != nil {
			return nil, fmt.Errorf("%s %s %s: %w", k.Name, c, cd.Key(), err)
		}
		progs = append(progs, m.cands[cd.Key()].prog)
	}
	res := &BenchResult{Kernel: k.Name, DType: dt, Case: c, Params: cand}
	base, name, err := t.b.Baseline(k, dt)
	if err != nil {
		return nil, err
	}
	if base != nil {
		defer base.Close()
		if err := m.verify(base, nil); err != nil {
			return nil, fmt.Errorf("baseline %s on %s %s: %w", name, k.Name, c, err)
		}
		if err := m.warmup(base); err != nil {
			return nil, err
		}
		res.Baseline = name
	}
	// times[i] are progs[i]'s samples; the baseline's last.
	order := progs
	if base != nil {
		order = append(order[:len(order):len(order)], base)
	}
	times := make([][]float64, len(order))
	for i := 0; i < samples; i += 10 {
		n := min(10, samples-i)
		for j := range order {
			// Every other round in reverse: none is always timed first.
			if i/10%2 == 1 {
				j = len(order) - 1 - j
			}
			tot, _, err := m.sample(order[j], n)
			if err != nil {
				if base != nil && j == len(order)-1 {
					return nil, fmt.Errorf("baseline %s: %w", name, err)
				}
				return nil, fmt.Errorf("%s %s %s: %w", k.Name, c, cands[j].Key(), err)
			}
			times[j] = append(times[j], tot...)
		}
	}
	s := stats.Summarize(times[0])
	res.MedianUS, res.IQRUS, res.Samples = round3(s.Median*1e6), round3(s.IQR*1e6), s.Count
	switch {
	case same:
		res.Against, res.AgainstUS = cand, res.MedianUS
	case other != nil:
		res.Against, res.AgainstUS = other, round3(stats.Median(times[1])*1e6)
	}
	if base != nil {
		res.BaseUS = round3(stats.Median(times[len(times)-1]) * 1e6)
	}
	res.Roofline = m.roofline(cand, s.Median)
	return res, nil
}
