package tuner

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/device"
)

// scriptedProg returns its batches of sample times in turn.
type scriptedProg struct{ batches [][]float64 }

func (p *scriptedProg) Run(_ device.Instance, n int) ([]float64, error) {
	b := p.batches[0]
	p.batches = p.batches[1:]
	return b[:n], nil
}

func (*scriptedProg) Output(device.Instance) ([]float32, error) { return nil, nil }

func (*scriptedProg) Close() error { return nil }

// -v says how much the batch that was taken again varied, how much the
// second one did, and which of the two was kept.
func TestRemeasureLog(t *testing.T) {
	noisy := []float64{100e-6, 100e-6, 100e-6, 300e-6} // above the 25 % limit
	quiet := []float64{100e-6, 101e-6, 99e-6, 100e-6}
	noisier := []float64{100e-6, 100e-6, 100e-6, 500e-6}
	for _, c := range []struct {
		name    string
		batches [][]float64
		want    string
		kept    []float64
	}{
		{"second quieter", [][]float64{noisy, quiet}, fmt.Sprintf("varied by %.0f%% (limit 25%%); measured again: %.0f%%; kept the second batch", 100*cv(noisy), 100*cv(quiet)), quiet},
		{"second noisier", [][]float64{noisy, noisier}, fmt.Sprintf("varied by %.0f%% (limit 25%%); measured again: %.0f%%; kept the first batch", 100*cv(noisy), 100*cv(noisier)), noisy},
	} {
		t.Run(c.name, func(t *testing.T) {
			var log bytes.Buffer
			tu := New(&fakeBackend{}, Config{Log: &log, Verbose: true})
			cand := search.Candidate{"BN": 8}
			m := &live{t: tu, problems: []*loaded{{p: &kernels.Problem{}}},
				cands: candidates{cand.Key(): {cand: cand, prog: &scriptedProg{batches: c.batches}}}}
			tot, err := m.samples(cand, 4)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(log.String(), c.want) {
				t.Errorf("log %q lacks %q", log.String(), c.want)
			}
			if len(tot) != len(c.kept) || tot[3] != c.kept[3] {
				t.Errorf("kept %v, want %v", tot, c.kept)
			}
		})
	}
}
