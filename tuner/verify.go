package tuner

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/device"
)

// VerifyReport counts the candidates of one family and dtype that passed.
type VerifyReport struct {
	Kernel  string
	DType   kernels.DType
	Valid   int            // candidates in the space on this device
	Checked int            // built and verified (all of Valid unless stopped or sampled)
	Passed  int            // passed verification on every odd shape
	Failed  map[string]int // failure reason (first line) → count
	Example map[string]string
	Elapsed time.Duration
}

// VerifyAll builds every valid candidate of a family (or every
// sample-th when sample > 1) and verifies it on the family's odd shapes,
// which are not multiples of any tile; it never stops at a failure.
// Candidates failing any of the where filters are left out before sampling.
func (t *Tuner) VerifyAll(ctx context.Context, k *kernels.Kernel, dt kernels.DType, sample int, where ...func(search.Candidate) bool) (*VerifyReport, error) {
	start := time.Now()
	// Shape constraints are checked per odd shape in verify, so the space
	// here holds only the family's shape-free constraints and device limits.
	space, err := t.Space(Task{Kernel: k, DType: dt})
	if err != nil {
		return nil, err
	}
	// Variants excluded from tuning only (emulated ones) are still verified.
	kept := space.Constraints[:0:0]
	for _, c := range space.Constraints {
		if !c.TuneOnly {
			kept = append(kept, c)
		}
	}
	space.Constraints = kept
	cands := space.Enumerate()
	if len(where) > 0 {
		var keep []search.Candidate
	next:
		for _, c := range cands {
			for _, w := range where {
				if !w(c) {
					continue next
				}
			}
			keep = append(keep, c)
		}
		cands = keep
	}
	valid := len(cands)
	if sample > 1 {
		var s []search.Candidate
		for i := 0; i < len(cands); i += sample {
			s = append(s, cands[i])
		}
		cands = s
	}
	rep, err := t.VerifyCandidates(ctx, k, dt, cands)
	if err != nil {
		return nil, err
	}
	rep.Valid = valid
	rep.Elapsed = time.Since(start)
	return rep, nil
}

// VerifyCandidates builds the given candidates of a family and verifies
// each on the family's odd shapes, as VerifyAll does; Valid is len(cands).
func (t *Tuner) VerifyCandidates(ctx context.Context, k *kernels.Kernel, dt kernels.DType, cands []search.Candidate) (*VerifyReport, error) {
	start := time.Now()
	task := Task{Kernel: k, DType: dt, Cases: k.Odd}
	m := newLive(t, task, nil)
	defer m.close()
	rep := &VerifyReport{Kernel: k.Name, DType: dt, Valid: len(cands), Failed: map[string]int{}, Example: map[string]string{}}
	// Odd shapes are loaded as timed problems of nothing: verify walks m.odd.
	for _, c := range k.Odd {
		if err := m.loadOne(c, false, nil); err != nil {
			return nil, err
		}
	}
	if pf, ok := t.b.(device.Prefetcher); ok {
		pf.Prefetch(k, dt, cands)
	}
	for _, c := range cands {
		if ctx.Err() != nil {
			break
		}
		rep.Checked++
		prog, err := t.b.Build(k, dt, c)
		if err == nil {
			err = m.verify(prog, c)
			prog.Close()
		} else {
			err = fmt.Errorf("build: %w", err)
		}
		if err != nil {
			reason := firstLine(err.Error())
			rep.Failed[reason]++
			if _, ok := rep.Example[reason]; !ok {
				rep.Example[reason] = c.Key()
			}
			continue
		}
		rep.Passed++
	}
	rep.Elapsed = time.Since(start)
	return rep, nil
}

// Reasons lists failure reasons by count, most frequent first.
func (v *VerifyReport) Reasons() []string {
	var rs []string
	for r := range v.Failed {
		rs = append(rs, r)
	}
	sort.Slice(rs, func(i, j int) bool {
		return v.Failed[rs[i]] > v.Failed[rs[j]] || (v.Failed[rs[i]] == v.Failed[rs[j]] && rs[i] < rs[j])
	})
	return rs
}

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}
