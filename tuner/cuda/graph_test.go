package cuda

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/kerntune/kerntune/internal/cudadrv"
	"github.com/kerntune/kerntune/internal/stats"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/device"
	"github.com/kerntune/kerntune/tuner/internal/gpuhost"
)

// A recorded time (Program.Run: groups of back-to-back launches between
// events) is within 15 % of the same kernel's time in a CUDA graph replay
// of 40 launches on the same rotated input copies, for decode-size kernels
// (the family's default candidate and the cuBLAS baseline) and a row
// kernel: what an application that replays a captured step sees.
func TestRecordedTimeMatchesGraphReplay(t *testing.T) {
	b := openGPU(t)
	llc := int64(b.Info().LLCBytes)
	for _, tc := range []struct {
		family string
		shape  []int
	}{
		{"gemv_nt", []int{1, 896, 896}},
		{"gemv_nt", []int{1, 4864, 896}},
		{"gemv_nt", []int{1, 151936, 896}},
		{"qgemv", []int{1, 896, 896, 4, 64}},
		{"lora", []int{1, 896, 896, 16}},
		{"softmax", []int{4096, 4096}},
	} {
		k, err := kernels.Get(tc.family)
		if err != nil {
			t.Fatal(err)
		}
		p, err := kernels.NewProblem(k, kernels.F16, kernels.Case{Shape: tc.shape}, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		in := int64(p.Bytes()) - int64(k.OutLen(tc.shape)*2)
		copies := int(min(64, max(1, (2*llc+in-1)/in)))
		inst, err := b.Load(p, copies)
		if err != nil {
			t.Fatal(err)
		}
		ps, _ := k.Space("cuda")
		tuned, err := b.Build(k, kernels.F16, search.Candidate(ps.Defaults()))
		if err != nil {
			t.Fatal(err)
		}
		progs := []struct {
			name string
			p    device.Program
		}{{"default", tuned}}
		if base, name, err := b.Baseline(k, kernels.F16); err == nil && base != nil {
			progs = append(progs, struct {
				name string
				p    device.Program
			}{name, base})
		}
		for _, pg := range progs {
			if _, err := pg.p.Run(inst, 5); err != nil { // warmup, and the group size
				t.Fatal(err)
			}
			rec, err := pg.p.Run(inst, 30)
			if err != nil {
				t.Fatal(err)
			}
			graph, err := graphReplay(b, pg.p, inst)
			if err != nil {
				t.Fatalf("%s %v %s: graph replay: %v", tc.family, tc.shape, pg.name, err)
			}
			r, g := stats.Median(rec)*1e6, graph*1e6
			t.Logf("%-8s %-18v %-8s recorded %8.2f µs  graph %8.2f µs  ratio %.3f  (copies %d)", tc.family, tc.shape, pg.name, r, g, r/g, copies)
			if r > 1.15*g || r < g/1.15 {
				t.Errorf("%s %v %s: recorded %.2f µs, graph replay %.2f µs: not within 15%%", tc.family, tc.shape, pg.name, r, g)
			}
		}
		for _, pg := range progs {
			pg.p.Close()
		}
		inst.Close()
	}
}

// graphReplay is the median time per launch of program pr in replays of a
// CUDA graph of 40 launches on inst's rotated copies, in seconds.
func graphReplay(b *Backend, tp device.Program, ti device.Instance) (float64, error) {
	var pr *program
	switch v := tp.(type) {
	case *program:
		pr = v
	case preparedProgram:
		if err := v.ready(ti); err != nil {
			return 0, err
		}
		pr = v.program
	default:
		return 0, fmt.Errorf("a %T cannot be captured", tp)
	}
	in, err := gpuhost.Of(ti, buffers{b}, "cuda")
	if err != nil {
		return 0, err
	}
	var ms []float64
	err = b.ctx.Do(func(t *cudadrv.Thread) (e error) {
		ms, e = t.TimeGraph(20, 40, func(t *cudadrv.Thread, _ int) error { return pr.launch(t, in, in.Next()) })
		return
	})
	if err != nil {
		return 0, err
	}
	return stats.Median(ms) / 1e3, nil
}
