package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
)

// lora's B is drawn in ±2^-4 (a trained adapter's update is a fraction of
// x·Wᵀ), every other operand in [-1, 1): the adapter term of the
// reference is then smaller than the main product.
func TestLoraInputsAdapterScale(t *testing.T) {
	k := testutil.Lookup(t, Get, "lora")
	p, err := NewProblem(k, F32, Case{Shape: []int{4, 64, 128, 16}}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"x", "W", "A", "B"} {
		lim := 1.0
		if name == "B" {
			lim = loraAdapterScale
		}
		var hi float64
		for _, v := range p.Inputs[i] {
			hi = math.Max(hi, math.Abs(float64(v)))
		}
		if hi > lim || hi < lim/2 {
			t.Errorf("%s: largest |value| %g, want in (%g, %g]", name, hi, lim/2, lim)
		}
	}
	// The adapter term against the main product, in norm.
	noB := append([][]float32(nil), p.Inputs...)
	noB[3] = make([]float32, len(p.Inputs[3]))
	full, main := refLora(p.Case, p.Inputs), refLora(p.Case, noB)
	var adapter, base float64
	for i := range full {
		adapter += (full[i] - main[i]) * (full[i] - main[i])
		base += main[i] * main[i]
	}
	if r := math.Sqrt(adapter / base); r >= 1 || r < 0.05 {
		t.Errorf("adapter term / main product = %.3f in norm, want a fraction in [0.05, 1)", r)
	}
}
