package replay

import (
	"math"
	"reflect"
	"testing"
)

func TestAcrossCaches(t *testing.T) {
	rep := func(mean, se, worst, sim float64) []Report {
		return []Report{{Budgets: []Budget{{Evals: 10, MeanRatio: mean, MeanRatioSE: se, WorstRatio: worst, SimTimeS: sim}}}}
	}
	got := AcrossCaches([][]Report{rep(0.9, 0.03, 0.7, 2), rep(0.8, 0.04, 0.5, 4)}, 0, 0)
	want := Across{Evals: 10, MeanRatio: 0.85, MeanRatioSE: 0.025, WorstRatio: 0.5, MeanSimTimeS: 3, PerCache: []float64{0.9, 0.8}}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	if got.Evals != want.Evals || !near(got.MeanRatio, want.MeanRatio) || !near(got.MeanRatioSE, want.MeanRatioSE) ||
		got.WorstRatio != want.WorstRatio || !near(got.MeanSimTimeS, want.MeanSimTimeS) || !reflect.DeepEqual(got.PerCache, want.PerCache) {
		t.Errorf("AcrossCaches = %+v, want %+v", got, want)
	}
	if got := AcrossCaches(nil, 0, 0); got.WorstRatio != 1 || got.PerCache != nil {
		t.Errorf("no reports: %+v", got)
	}
}
