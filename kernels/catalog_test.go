package kernels

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		family string
		shape  []int
		want   string
	}{
		{"gemv_nt", []int{1, 896, 896}, "tiny"},
		{"gemv_nt", []int{1, 1152, 896}, "tiny"},
		{"gemv_nt", []int{1, 2047, 2047}, "tiny"},
		{"gemv_nt", []int{1, 896, 4864}, "largeK_smallN"},
		{"gemv_nt", []int{1, 2047, 2048}, "largeK_smallN"},
		{"gemv_nt", []int{1, 2048, 896}, "mid"},
		{"gemv_nt", []int{1, 4096, 8192}, "mid"},
		{"gemv_nt", []int{1, 4097, 10}, "largeN"},
		{"gemv_nt", []int{1, 9728, 896}, "largeN"},
		{"gemv_nt", []int{1, 151936, 896}, "largeN"},
		{"gemm_av", []int{128, 128, 128}, "small"},
		{"gemm_av", []int{16, 4864, 896}, "skinny"},
		{"gemm_av", []int{4864, 16, 896}, "skinny"},
		{"gemm_av", []int{512, 512, 512}, "medium"},
		{"gemm_av", []int{512, 4864, 896}, "large"},
		{"gemm_at_b", []int{4096, 16, 896}, "skinny"},
		{"gemm_at_b", []int{16, 4096, 896}, "medium"}, // Z is 4096×896: not skinny
		{"gemm_at_b", []int{1024, 1024, 1024}, "large"},
		{"softmax", []int{4096, 128}, "short"},
		{"softmax", []int{1, 257}, "medium"},
		{"softmax", []int{4096, 4096}, "long"},
		{"rmsnorm", []int{16, 151936}, "xlong"},
	}
	for _, tt := range tests {
		k, err := Get(tt.family)
		if err != nil {
			t.Fatal(err)
		}
		got, err := k.Classify(tt.shape)
		if err != nil || got != tt.want {
			t.Errorf("%s %v: class %q (%v), want %q", tt.family, tt.shape, got, err, tt.want)
		}
	}
}

func TestClassifyRejects(t *testing.T) {
	tests := []struct {
		family string
		shape  []int
		want   string
	}{
		{"gemv_nt", []int{1, 896}, "3 dims"},
		{"gemv_nt", []int{2, 8, 8}, "m must be 1"},
		{"gemm_av", []int{0, 1, 1}, "out of range"},
		{"gemm_av", []int{-1, 1, 1}, "out of range"},
		{"softmax", []int{1 << 21, 1 << 21}, "exceeds"},
		{"rmsnorm", []int{1, 2, 3}, "2 dims"},
	}
	for _, tt := range tests {
		k, _ := Get(tt.family)
		if _, err := k.Classify(tt.shape); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s %v: error %v, want one mentioning %q", tt.family, tt.shape, err, tt.want)
		}
	}
}

// Every class is reached by the default workload, and every workload case is valid.
func TestWorkloadCoversClasses(t *testing.T) {
	for _, k := range All() {
		seen := map[string]bool{}
		for _, c := range append(append([]Case{}, k.Workload...), k.Odd...) {
			cl, err := k.Classify(c.Shape)
			if err != nil {
				t.Fatalf("%s %v: %v", k.Name, c, err)
			}
			seen[cl] = true
		}
		for _, cl := range k.TunedClasses() {
			if !seen[cl] {
				t.Errorf("%s: class %s has no workload shape", k.Name, cl)
			}
		}
	}
	gemv, _ := Get("gemv_nt")
	want := []string{"1x9728x896", "1x896x4864", "1x896x896", "1x4864x896", "1x1152x896+bias", "1x151936x896"}
	have := map[string]bool{}
	for _, c := range gemv.Workload {
		have[c.String()] = true
	}
	for _, w := range want {
		if !have[w] {
			t.Errorf("gemv_nt workload lacks the Qwen2.5-0.5B decode shape %s", w)
		}
	}
}

func TestReferences(t *testing.T) {
	f := func(xs ...float32) []float32 { return xs }
	tests := []struct {
		family string
		c      Case
		in     [][]float32
		want   []float64
	}{
		// A = [1 2; 3 4] (2×2), V = [5; 6] (2×1) → C = [17; 39].
		{"gemm_av", Case{Shape: []int{2, 1, 2}}, [][]float32{f(1, 2, 3, 4), f(5, 6)}, []float64{17, 39}},
		// A (m=2 × n=1) = [1; 2], B (2×2) = [3 4; 5 6] → Z = Aᵀ·B = [13 16].
		{"gemm_at_b", Case{Shape: []int{2, 1, 2}}, [][]float32{f(1, 2), f(3, 4, 5, 6)}, []float64{13, 16}},
		// x = [1 2], W = [1 0; 0 1; 1 1] → y = [1 2 3] + bias [1 1 1].
		{"gemv_nt", Case{Shape: []int{1, 3, 2}, Options: []string{Bias}}, [][]float32{f(1, 2), f(1, 0, 0, 1, 1, 1), f(1, 1, 1)}, []float64{2, 3, 4}},
		// Two rows of x, two of W (one 4-bit word each: q = 1, 2 and 3, 0), one
		// group: y[i, j] = s[j]·Σ x[i]·q[j] + β[j]·Σ x[i], row-major.
		{"qgemv", Case{Shape: []int{2, 2, 8, 4, 8}}, [][]float32{f(1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0), f(Int(0x21), Int(0x03)), f(1, 2), f(0, 0.5)}, []float64{1, 6.5, 2, 0.5}},
		{"softmax", Case{Shape: []int{1, 2}}, [][]float32{f(1000, 1000)}, []float64{0.5, 0.5}},
		{"rmsnorm", Case{Shape: []int{1, 2}}, [][]float32{f(3, 4), f(1, 2)}, []float64{3 / math.Sqrt(12.5+RMSNormEps), 8 / math.Sqrt(12.5+RMSNormEps)}},
	}
	for _, tt := range tests {
		k, _ := Get(tt.family)
		got := k.Reference(tt.c, tt.in)
		if len(got) != len(tt.want) {
			t.Errorf("%s: %d outputs, want %d", tt.family, len(got), len(tt.want))
			continue
		}
		for i := range tt.want {
			if math.Abs(got[i]-tt.want[i]) > 1e-12 {
				t.Errorf("%s: got %v, want %v", tt.family, got, tt.want)
				break
			}
		}
	}
}

func TestProblemVerify(t *testing.T) {
	k, _ := Get("softmax")
	for _, dt := range DTypes {
		p, err := NewProblem(k, dt, Case{Shape: []int{3, 37}}, rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatal(err)
		}
		ref := p.Reference()
		out := make([]float32, len(ref))
		for i, v := range ref {
			out[i] = float32(v)
		}
		if err := p.Verify(out); err != nil {
			t.Errorf("%s: exact output rejected: %v", dt, err)
		}
		out[5] = float32(math.NaN())
		if err := p.Verify(out); err == nil || !strings.Contains(err.Error(), "not finite") {
			t.Errorf("%s: poisoned element accepted: %v", dt, err)
		}
		big := 0
		for i := range ref {
			if ref[i] > ref[big] {
				big = i
			}
		}
		out[5] = float32(ref[5])
		out[big] = float32(ref[big]) * float32(1+max(0.01, 5*dt.Tolerance())) // 1 %, 4 % in bf16
		if err := p.Verify(out); err == nil || !strings.Contains(err.Error(), "tolerance") {
			t.Errorf("%s: wrong element accepted: %v", dt, err)
		}
		zero := true
		for _, v := range p.Inputs[0] {
			zero = zero && v == 0
		}
		if zero {
			t.Errorf("%s: inputs are all zero", dt)
		}
	}
}

func TestBytesAndFlops(t *testing.T) {
	k, _ := Get("gemv_nt")
	c := Case{Shape: []int{1, 896, 4864}}
	if got, want := k.Bytes(c, F16), float64(2*(4864+896*4864+896)); got != want {
		t.Errorf("gemv f16 bytes = %v, want %v", got, want)
	}
	if got := k.Flops(c); got != 2*896*4864 {
		t.Errorf("gemv flops = %v", got)
	}
	if _, err := ParseDType("f64"); err == nil {
		t.Error("f64 accepted")
	}
}

// A TF32=1 candidate in f32 is held to TF32Tolerance, every other to the
// dtype's: an error between 1e-5 and 1e-3 passes the first only.
func TestToleranceForTF32(t *testing.T) {
	k, _ := Get("gemm_av")
	tf32 := map[string]int{"MMA": 1, "TF32": 1}
	for _, tt := range []struct {
		dt   DType
		p    map[string]int
		want float64
	}{
		{F32, nil, 1e-5},
		{F32, map[string]int{"MMA": 1, "TF32": 0}, 1e-5},
		{F32, tf32, TF32Tolerance},
		{F16, tf32, 1e-3},
	} {
		if got := k.ToleranceFor(tt.dt, tt.p); got != tt.want {
			t.Errorf("%s %v: tolerance %g, want %g", tt.dt, tt.p, got, tt.want)
		}
	}
	p, err := NewProblem(k, F32, Case{Shape: []int{37, 53, 29}}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, len(p.Reference()))
	for i, v := range p.Reference() {
		out[i] = float32(v * (1 + 3e-4)) // about the error TF32 rounding leaves
	}
	if err := p.VerifyFor(out, nil); err == nil || !strings.Contains(err.Error(), "f32 tolerance") {
		t.Errorf("f32 candidate with a 3e-4 error: %v", err)
	}
	if err := p.VerifyFor(out, tf32); err != nil {
		t.Errorf("TF32 candidate with a 3e-4 error rejected: %v", err)
	}
	for i := range out {
		out[i] *= 1.01
	}
	if err := p.VerifyFor(out, tf32); err == nil || !strings.Contains(err.Error(), "f32 TF32 tolerance") {
		t.Errorf("TF32 candidate with a 1e-2 error: %v", err)
	}
}
