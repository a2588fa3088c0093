package gpu

import (
	"github.com/kerntune/kerntune/kernels"
)

// gemvSource: y = x·Wᵀ (+ bias). Segments of TPR threads each own RPT
// consecutive rows of W and split k between them, then reduce across the
// segment. A pass issues its loads before its arithmetic: UNROLL VEC-wide
// pieces of x and of each of its RPT rows, a piece past k predicated off
// rather than left to a tail loop. A larger UNROLL puts more loads in
// flight per thread but takes registers, and so threads resident at once:
// where the whole grid fits on the device at once, its rows' loads are in
// flight anyway (docs/results/gpu-h200/2026-11-29/gemv). x's pieces are
// shared by the RPT rows; W is read once, hence the streaming loads. A
// segment past n reads row n − 1 and stores nothing, so no load waits on
// a branch.
const gemvSource = `
  const int seg = LID / TPR, sl = LID % TPR;
  const int row0 = (GROUP_X * (NTHREADS / TPR) + seg) * RPT;
  SHARED(float, red, NTHREADS);
  int base[RPT];
  float acc[RPT];
  UNROLL_LOOP
  for (int r = 0; r < RPT; ++r) {
    base[r] = (row0 + r < n ? row0 + r : n - 1) * k;
    acc[r] = 0.0f;
  }
  const int step = TPR * VEC;
  for (int c0 = sl * VEC; c0 < k; c0 += UNROLL * step) {
    float xv[UNROLL][VEC];
    float w[RPT][UNROLL][VEC];
    UNROLL_LOOP
    for (int u = 0; u < UNROLL; ++u) {
      const int c = c0 + u * step;
      if (c < k) {
        LOADV(x, c, xv[u]);
        UNROLL_LOOP
        for (int r = 0; r < RPT; ++r) LOADV_STREAM(W, base[r] + c, w[r][u]);
      }
    }
    UNROLL_LOOP
    for (int u = 0; u < UNROLL; ++u) {
      if (c0 + u * step < k) {
        UNROLL_LOOP
        for (int r = 0; r < RPT; ++r) {
          UNROLL_LOOP
          for (int v = 0; v < VEC; ++v) acc[r] = FMA(w[r][u][v], xv[u][v], acc[r]);
        }
      }
    }
  }
  UNROLL_LOOP
  for (int r = 0; r < RPT; ++r) {
    const float s = SEG_SUM(acc[r], TPR, red);
    if (row0 + r < n && sl == 0) STORE(y, row0 + r, has_bias != 0 ? s + LOAD(bias, row0 + r) : s);
  }`

func init() { AddBuiltin(gemvBody) }

// rpt is a candidate's rows per segment; a parameter set from before RPT
// existed has none and means one.
func rpt(p map[string]int) int { return max(p["RPT"], 1) }

var gemvBody = &Body{
	Family: "gemv_nt", Func: "kt_gemv_nt",
	Args:        []Arg{{"x", In}, {"W", In}, {"bias", In}, {"y", Out}, {"n", Int}, {"k", Int}, {"has_bias", Int}},
	Source:      gemvSource,
	Defines:     func(p map[string]int) map[string]int { return map[string]int{"NTHREADS": p["TG"], "RPT": rpt(p)} },
	SharedBytes: func(p map[string]int) int { return 4 * p["TG"] },
	Geometry: func(shape []int, p map[string]int) Launch {
		return Launch{Grid: [2]int{ceilDiv(shape[1], p["TG"]/p["TPR"]*rpt(p)), 1}, Threads: p["TG"]}
	},
	Scalars: func(c kernels.Case, _ map[string]float64) []any {
		hb := int32(0)
		if c.Has(kernels.Bias) {
			hb = 1
		}
		return []any{int32(c.Shape[1]), int32(c.Shape[2]), hb}
	},
}
