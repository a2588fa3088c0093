package tuner

import (
	"context"
	"fmt"

	"github.com/kerntune/kerntune/internal/stats"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params/paramfile"
	"github.com/kerntune/kerntune/search"
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
}

// Bench verifies c on the family's odd shapes and on the case, then times it
// and the baseline interleaved, samples each, after a warmup.
func (t *Tuner) Bench(ctx context.Context, k *kernels.Kernel, dt kernels.DType, c kernels.Case, cand search.Candidate, samples int) (*BenchResult, error) {
	task := Task{Kernel: k, DType: dt, Cases: []kernels.Case{c}}
	m := newLive(t, task, nil)
	defer m.close()
	space, err := t.Space(task)
	if err != nil {
		return nil, err
	}
	if err := space.Check(cand); err != nil {
		return nil, fmt.Errorf("%s %s: parameters %s are not valid here: %w", k.Name, c, cand.Key(), err)
	}
	if err := m.load(); err != nil {
		return nil, err
	}
	if _, err := (&measurement{live: m, progress: newProgress(t, m, 0)}).measure(cand, 1); err != nil {
		return nil, fmt.Errorf("%s %s %s: %w", k.Name, c, cand.Key(), err)
	}
	prog := m.cands[cand.Key()].prog
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
	var tuned, baseT []float64
	for i := 0; i < samples; i += 10 {
		n := min(10, samples-i)
		tot, _, err := m.sample(prog, n)
		if err != nil {
			return nil, err
		}
		tuned = append(tuned, tot...)
		if base != nil {
			tot, _, err := m.sample(base, n)
			if err != nil {
				return nil, fmt.Errorf("baseline %s: %w", name, err)
			}
			baseT = append(baseT, tot...)
		}
	}
	s := stats.Summarize(tuned)
	res.MedianUS, res.IQRUS, res.Samples = round3(s.Median*1e6), round3(s.IQR*1e6), s.Count
	if len(baseT) > 0 {
		res.BaseUS = round3(stats.Median(baseT) * 1e6)
	}
	res.Roofline = m.roofline(cand, s.Median)
	return res, nil
}
