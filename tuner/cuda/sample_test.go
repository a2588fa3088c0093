package cuda

import (
	"errors"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/kerntune/kerntune/internal/cudadrv"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/device"
	"github.com/kerntune/kerntune/tuner/internal/gpuhost"
)

// openGPU opens the first CUDA device, or skips without one (unless
// CUDADRV_REQUIRE_GPU is set, which makes that a failure).
func openGPU(t *testing.T) *Backend {
	t.Helper()
	b, err := Open(0)
	if err != nil {
		if errors.Is(err, device.ErrUnavailable) && os.Getenv("CUDADRV_REQUIRE_GPU") == "" {
			t.Skipf("no CUDA device (set CUDADRV_REQUIRE_GPU=1 to fail instead): %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// On the GPU, OutputSample returns what Output and RowSample.Extract
// return on the host: the same rows, the same first bad element, in f32
// and f16; an element left unwritten outside the sample is found, and the
// verification then fails.
func TestOutputSampleOnGPU(t *testing.T) {
	b := openGPU(t)
	k, err := kernels.Get("softmax")
	if err != nil {
		t.Fatal(err)
	}
	ps, _ := k.Space("cuda")
	for _, dt := range []kernels.DType{kernels.F32, kernels.F16} {
		p, err := kernels.NewProblem(k, dt, kernels.Case{Shape: []int{2048, 1024}}, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		s, sampled := p.SampleRows(7)
		if !sampled {
			t.Fatalf("%s: a 2048x1024 output is not sampled", dt)
		}
		inst, err := b.Load(p, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer inst.Close()
		tp, err := b.Build(k, dt, search.Candidate(ps.Defaults()))
		if err != nil {
			t.Fatal(err)
		}
		defer tp.Close()
		pr := tp.(*program)
		whole, err := pr.Output(inst)
		if err != nil {
			t.Fatal(err)
		}
		wantRows, wantBad := s.Extract(whole)
		rows, bad, n, err := pr.OutputSample(inst, s)
		if err != nil {
			t.Fatal(err)
		}
		if n != len(whole) || bad != wantBad || len(rows) != len(wantRows) {
			t.Fatalf("%s: length %d, first bad %d, %d sampled; want %d, %d, %d", dt, n, bad, len(rows), len(whole), wantBad, len(wantRows))
		}
		for i := range rows {
			if rows[i] != wantRows[i] {
				t.Fatalf("%s: sampled element %d is %g, want %g", dt, i, rows[i], wantRows[i])
			}
		}
		if err := p.VerifySample(s, rows, bad, n, nil); err != nil {
			t.Fatalf("%s: the default fails the sampled verification: %v", dt, err)
		}

		// A run that leaves one element outside the sample unwritten.
		inSample := map[int]bool{}
		for _, r := range s.Rows {
			inSample[r] = true
		}
		hole := -1
		for r := 3; r < 2048; r++ {
			if !inSample[r] {
				hole = r*1024 + 17
				break
			}
		}
		holed := &program{b: b, launch: func(th *cudadrv.Thread, in *instance, cp int) error {
			if err := pr.launch(th, in, cp); err != nil {
				return err
			}
			// Poison one element again (a whole word: two f16 elements).
			word := hole * dt.Size() / 4
			return th.MemsetD32(in.Out+cudadrv.DevPtr(4*word), gpuhost.NaNWord(dt), 1)
		}}
		_, bad, _, err = holed.OutputSample(inst, s)
		if err != nil {
			t.Fatal(err)
		}
		if want := hole * dt.Size() / 4 * 4 / dt.Size(); bad != want {
			t.Errorf("%s: first bad element %d, want %d", dt, bad, want)
		}
	}
}
