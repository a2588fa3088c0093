package tuner

import (
	"fmt"
	"time"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
)

// SampledOutputer is implemented by programs whose whole output is costly
// to bring to the tuner (one in a worker process crosses a pipe).
// OutputSample runs the kernel as Output does and returns only the rows of
// the sample (kernels.RowSample.Extract of the whole output), the index of
// the first element of the whole output that is not finite (-1 for none)
// and the output's length.
type SampledOutputer interface {
	OutputSample(inst Instance, s kernels.RowSample) (rows []float32, firstBad, outLen int, err error)
}

// verifyOn runs prog once on problem l and compares its output with the
// reference: in full, or for a large output every element's finiteness and
// a sample of rows (kernels.RowSample), which differs from candidate to
// candidate (cand; nil for a baseline).
func (r *run) verifyOn(prog Program, l *loaded, cand search.Candidate) error {
	var salt uint64
	if cand != nil {
		salt = kernels.Salt(cand.Key())
	}
	s, sampled := l.p.SampleRows(salt)
	sampled = sampled && !r.t.cfg.VerifyFull
	t0 := time.Now()
	if !sampled {
		out, err := prog.Output(l.inst)
		r.clk.deviceOnly(t0)
		if err != nil {
			return fmt.Errorf("running on %s: %w", l.p.Case, err)
		}
		return l.p.VerifyFor(out, cand)
	}
	var (
		rows        []float32
		firstBad, n int
		err         error
	)
	if so, ok := prog.(SampledOutputer); ok {
		rows, firstBad, n, err = so.OutputSample(l.inst, s)
		r.clk.deviceOnly(t0)
	} else {
		var out []float32
		out, err = prog.Output(l.inst)
		r.clk.deviceOnly(t0)
		rows, firstBad = s.Extract(out)
		n = len(out)
	}
	if err != nil {
		return fmt.Errorf("running on %s: %w", l.p.Case, err)
	}
	return l.p.VerifySample(s, rows, firstBad, n, cand)
}
