package stats

import (
	"math"
	"testing"
)

// The expected values were derived by hand: U by counting pairs (ties one
// half) and from midrank sums, σ² = n1·n2/12·((n+1) − Σ(t³−t)/(n(n−1))),
// and the p-values from Φ((U − n1·n2/2 ± 0.5)/σ) evaluated with erfc
// (scipy is not available here to cross-check).
func TestMannWhitneyU(t *testing.T) {
	tests := []struct {
		name            string
		x, y            []float64
		u, z            float64
		pLess, pGreater float64
	}{
		// Every x below every y: U = 0, μ = 6, σ² = 8.
		{"separated", []float64{1, 2, 3}, []float64{4, 5, 6, 7}, 0, -2.1213203435596424, 0.025914963608954858, 0.9892218666199918},
		// Ranks 1, 3, 3 | 3, 5 (three-way tie at 2): R1 = 7, U = 1, σ² = 2.4.
		{"ties", []float64{1, 2, 2}, []float64{2, 3}, 1, -1.2909944487358056, 0.16646080403278302, 0.9467084152125562},
		// Ranks of x: 3, 5, 7, 8, 9 → R1 = 32, U = 17 (U of y = 3), σ² = 50/3.
		{"textbook", []float64{19, 22, 16, 29, 24}, []float64{20, 11, 17, 12}, 17, 1.7146428199482247, 0.9669037101389033, 0.0556734432665702},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := MannWhitneyU(tt.x, tt.y)
			if got.U != tt.u || math.Abs(got.Z-tt.z) > 1e-9 {
				t.Errorf("U = %v, Z = %v; want %v, %v", got.U, got.Z, tt.u, tt.z)
			}
			if math.Abs(got.PLess-tt.pLess) > 1e-6 || math.Abs(got.PGreater-tt.pGreater) > 1e-6 {
				t.Errorf("PLess = %v, PGreater = %v; want %v, %v", got.PLess, got.PGreater, tt.pLess, tt.pGreater)
			}
			// Swapping the samples mirrors the statistic.
			sw := MannWhitneyU(tt.y, tt.x)
			if sw.U != float64(len(tt.x)*len(tt.y))-tt.u || math.Abs(sw.PLess-got.PGreater) > 1e-12 {
				t.Errorf("swapped: U = %v, PLess = %v; want %v, %v", sw.U, sw.PLess, float64(len(tt.x)*len(tt.y))-tt.u, got.PGreater)
			}
		})
	}
}

func TestMannWhitneyNoEvidence(t *testing.T) {
	for _, tt := range []struct {
		name string
		x, y []float64
	}{
		{"empty x", nil, []float64{1, 2}},
		{"empty y", []float64{1}, nil},
		{"all tied", []float64{2, 2}, []float64{2, 2, 2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := MannWhitneyU(tt.x, tt.y)
			if got.PLess != 1 || got.PGreater != 1 {
				t.Errorf("p-values %v, %v; want 1, 1", got.PLess, got.PGreater)
			}
		})
	}
}
