package kernels

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// exactOutput is the reference rounded to float32: what a correct kernel writes.
func exactOutput(p *Problem) []float32 {
	ref := p.Reference()
	out := make([]float32, len(ref))
	for i, v := range ref {
		out[i] = float32(v)
	}
	return out
}

func mustProblem(t *testing.T, name string, dt DType, shape ...int) *Problem {
	t.Helper()
	k, err := Get(name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewSeededProblem(k, dt, Case{Shape: shape}, 7)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Small outputs are compared in full; large ones on a sample that holds
// the ends, the power-of-two edges and random rows, about SampleElems
// elements, and differs between candidates.
func TestSampleRows(t *testing.T) {
	if _, sampled := mustProblem(t, "softmax", F32, 4096, 128).SampleRows(1); sampled {
		t.Error("a 4096×128 output (below FullVerifyMax) is sampled")
	}
	if _, sampled := mustProblem(t, "gemv_nt", F32, 1, 151936, 8).SampleRows(1); sampled {
		t.Error("a gemv output is sampled")
	}
	p := mustProblem(t, "rmsnorm", F32, 2048, 1024) // 2M elements
	a, sampled := p.SampleRows(Salt("a"))
	if !sampled {
		t.Fatal("a 2048×1024 output is not sampled")
	}
	if a.RowLen != 1024 {
		t.Errorf("row length %d, want 1024", a.RowLen)
	}
	if n := a.Elems(); n < SampleElems || n > SampleElems+1024 {
		t.Errorf("sample of %d elements, want about %d", n, SampleElems)
	}
	if !slices.IsSorted(a.Rows) || len(slices.Compact(slices.Clone(a.Rows))) != len(a.Rows) {
		t.Errorf("rows not ascending and distinct: %v", a.Rows)
	}
	for _, r := range []int{0, 1, 2046, 2047, 63, 64, 127, 128, 1023, 1024} {
		if !slices.Contains(a.Rows, r) {
			t.Errorf("row %d missing from the sample", r)
		}
	}
	b, _ := p.SampleRows(Salt("b"))
	if slices.Equal(a.Rows, b.Rows) {
		t.Error("two candidates get the same random rows")
	}
	again, _ := p.SampleRows(Salt("a"))
	if !slices.Equal(a.Rows, again.Rows) {
		t.Error("the same candidate gets different rows")
	}
}

// A correct output passes; an unwritten element anywhere, a wrong value in
// a sampled row and a short output fail, with the element and the shape.
func TestVerifySample(t *testing.T) {
	for _, tc := range []struct {
		name  string
		p     *Problem
		shape string
	}{
		{"softmax", mustProblem(t, "softmax", F32, 2048, 1024), "2048x1024"},
		{"gemm_av", mustProblem(t, "gemm_av", F32, 1100, 1000, 8), "1100x1000x8"},
		{"rmsnorm f16", mustProblem(t, "rmsnorm", F16, 1500, 1024), "1500x1024"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.p
			s, sampled := p.SampleRows(Salt("cand"))
			if !sampled {
				t.Fatal("not sampled")
			}
			good := exactOutput(p)
			check := func(out []float32) error {
				rows, bad := s.Extract(out)
				return p.VerifySample(s, rows, bad, len(out), nil)
			}
			if err := check(good); err != nil {
				t.Fatalf("a correct output fails: %v", err)
			}
			// An element outside every sampled row left unwritten (NaN).
			unsampled := -1
			for r := 0; r < len(good)/s.RowLen; r++ {
				if !slices.Contains(s.Rows, r) {
					unsampled = r
				}
			}
			out := slices.Clone(good)
			out[unsampled*s.RowLen+3] = float32(math.NaN())
			if err := check(out); err == nil || !strings.Contains(err.Error(), "not finite") {
				t.Errorf("an unwritten element in an unsampled row: %v", err)
			}
			// A wrong value in the last row (a tail or index-range bug).
			out = slices.Clone(good)
			for i := len(out) - s.RowLen; i < len(out); i++ {
				out[i] = 2*out[i] + 1
			}
			if err := check(out); err == nil || !strings.Contains(err.Error(), "exceeds") || !strings.Contains(err.Error(), tc.shape) {
				t.Errorf("a wrong last row: %v", err)
			}
			if err := check(good[:len(good)-1]); err == nil || !strings.Contains(err.Error(), "elements") {
				t.Errorf("a short output: %v", err)
			}
		})
	}
}
