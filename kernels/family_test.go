package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kerntune/kerntune/params/families"
)

// Every built-in kernel is a family params describes. (Every described
// family has a catalog entry, here or beside its GPU body: kernels/gpu's
// TestEveryFamilyComplete, whose binary holds both.)
func TestBuiltinsMatchParams(t *testing.T) {
	want := families.BuiltinNames()
	for _, name := range catalog.Families() {
		if !slices.Contains(want, name) {
			t.Errorf("built-in kernel %s is not a params family (%v)", name, want)
		}
	}
}

// A case turns on only the options its family has; an option adds what
// the family says it adds (gemv_nt's bias operand) and shows in the case's name.
func TestCaseOptions(t *testing.T) {
	tests := []struct {
		family, wantErr, name string // name: the case's String
		c                     Case
		inputs                int
	}{
		{family: "gemv_nt", c: Case{Shape: []int{1, 5, 7}}, inputs: 2, name: "1x5x7"},
		{family: "gemv_nt", c: Case{Shape: []int{1, 5, 7}, Options: []string{Bias}}, inputs: 3, name: "1x5x7+bias"},
		{family: "gemv_nt", c: Case{Shape: []int{1, 5, 7}, Options: []string{"relu"}}, wantErr: `gemv_nt has no option "relu" (allowed: bias)`},
		{family: "gemm_av", c: Case{Shape: []int{2, 3, 4}, Options: []string{Bias}}, wantErr: `gemm_av has no option "bias" (it has no options)`},
	}
	for _, tt := range tests {
		k, err := Get(tt.family)
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewProblem(k, F32, tt.c, rand.New(rand.NewPCG(1, 2)))
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("%s %v: error %v, want %q", tt.family, tt.c, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s %v: %v", tt.family, tt.c, err)
		}
		if len(p.Inputs) != tt.inputs || tt.c.String() != tt.name || tt.c.Has(Bias) != (tt.inputs == 3) {
			t.Errorf("%s: %d inputs, name %q, has bias %v; want %d, %q", tt.family, len(p.Inputs), tt.c, tt.c.Has(Bias), tt.inputs, tt.name)
		}
	}
}

// Softmax draws large logits (its Fill); the other families draw values
// in [-1, 1) (lora's own Fill too: its B in ±2⁻⁴).
func TestFill(t *testing.T) {
	for _, k := range All() {
		if k.Name == families.QGemv {
			continue // packed words: TestFillQGemv
		}
		p, err := NewProblem(k, F32, k.Odd[0], rand.New(rand.NewPCG(3, 4)))
		if err != nil {
			t.Fatal(err)
		}
		large := 0
		for _, in := range p.Inputs {
			for _, v := range in {
				if v >= 40 && v < 60 {
					large++
				} else if v < -1 || v >= 1 {
					t.Fatalf("%s: input %v outside [-1, 1) and not a large logit", k.Name, v)
				}
			}
		}
		if large > 0 && k.Fill == nil {
			t.Errorf("%s: %d large inputs without a Fill of its own", k.Name, large)
		}
		if k.Name == families.Softmax && large == 0 {
			t.Errorf("softmax: no large logits among its inputs")
		}
	}
	sm, _ := Get(families.Softmax)
	if sm.Fill == nil {
		t.Error("softmax draws no large logits: a naive exp would pass verification")
	}
}

// qgemv draws every bit of its packed words, positive scales and
// non-positive biases (what mx.quantize makes of weights in [-1, 1)), and
// uniform x.
func TestFillQGemv(t *testing.T) {
	k, _ := Get(families.QGemv)
	for _, c := range k.Odd {
		p, err := NewProblem(k, F16, c, rand.New(rand.NewPCG(3, 4)))
		if err != nil {
			t.Fatal(err)
		}
		var or, and uint32 = 0, ^uint32(0)
		for _, v := range p.Inputs[1] {
			or |= math.Float32bits(v)
			and &= math.Float32bits(v)
		}
		if or != ^uint32(0) || and != 0 {
			t.Errorf("%s: packed words OR %#x AND %#x: not every bit drawn", c, or, and)
		}
		for i, v := range p.Inputs[2] {
			if !(v > 0 && v < 0.2) || !(p.Inputs[3][i] <= 0 && p.Inputs[3][i] >= -1) {
				t.Fatalf("%s: scale %v bias %v", c, v, p.Inputs[3][i])
			}
		}
		// [-1, 1) drawn, then rounded to f16, which may reach 1.
		for _, v := range p.Inputs[0] {
			if v < -1 || v > 1 {
				t.Fatalf("%s: x %v outside [-1, 1]", c, v)
			}
		}
	}
}

// rmsnorm's kernels take its scalar eps; its reference uses RMSNormEps:
// they must agree, or every candidate fails verification by a little.
func TestRMSNormEps(t *testing.T) {
	k, _ := Get(families.RMSNorm)
	if got := k.Scalars["eps"]; got != RMSNormEps {
		t.Errorf("rmsnorm scalar eps = %v, want the reference's %v", got, RMSNormEps)
	}
}

// qgemv's baseline (p nil) gets its looser bound; its candidates keep the dtype's.
func TestBaselineTolerance(t *testing.T) {
	k, _ := Get(families.QGemv)
	for _, tt := range []struct {
		dt   DType
		p    map[string]int
		want float64
	}{
		{F16, nil, 2e-2}, {BF16, nil, 1e-1}, {F32, nil, F32.Tolerance()},
		{F16, map[string]int{"TPR": 16}, F16.Tolerance()}, {BF16, map[string]int{}, BF16.Tolerance()},
	} {
		if got := k.ToleranceFor(tt.dt, tt.p); got != tt.want {
			t.Errorf("%s %v: tolerance %v, want %v", tt.dt, tt.p, got, tt.want)
		}
	}
}
