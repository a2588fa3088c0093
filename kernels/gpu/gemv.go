package gpu

import (
	"github.com/kerntune/kerntune/kernels"
)

// gemvSource: y = x·Wᵀ (+ bias). Segments of TPR threads each own one row
// of W and split k between them (VEC-wide aligned loads, UNROLL independent
// accumulators), then reduce across the segment.
const gemvSource = `
  const int seg = LID / TPR, sl = LID % TPR;
  const int row = GROUP_X * (NTHREADS / TPR) + seg;
  SHARED(float, red, NTHREADS);
  float acc[UNROLL];
  UNROLL_LOOP
  for (int u = 0; u < UNROLL; ++u) acc[u] = 0.0f;
  if (row < n) {
    const int base = row * k;
    const int step = TPR * VEC;
    int c = sl * VEC;
    for (; c + (UNROLL - 1) * step + VEC <= k; c += UNROLL * step) {
      UNROLL_LOOP
      for (int u = 0; u < UNROLL; ++u) {
        float w[VEC], xv[VEC];
        LOADV(W, base + c + u * step, w);
        LOADV(x, c + u * step, xv);
        UNROLL_LOOP
        for (int v = 0; v < VEC; ++v) acc[u] = FMA(w[v], xv[v], acc[u]);
      }
    }
    for (; c < k; c += step) {
      float w[VEC], xv[VEC];
      LOADV(W, base + c, w);
      LOADV(x, c, xv);
      UNROLL_LOOP
      for (int v = 0; v < VEC; ++v) acc[0] = FMA(w[v], xv[v], acc[0]);
    }
  }
  float s = 0.0f;
  UNROLL_LOOP
  for (int u = 0; u < UNROLL; ++u) s += acc[u];
  s = SEG_SUM(s, TPR, red);
  if (row < n && sl == 0) {
    if (has_bias != 0) s += LOAD(bias, row);
    STORE(y, row, s);
  }`

func init() { AddBuiltin(gemvBody) }

var gemvBody = &Body{
	Family: "gemv_nt", Func: "kt_gemv_nt",
	Args:        []Arg{{"x", In}, {"W", In}, {"bias", In}, {"y", Out}, {"n", Int}, {"k", Int}, {"has_bias", Int}},
	Source:      gemvSource,
	Defines:     func(p map[string]int) map[string]int { return map[string]int{"NTHREADS": p["TG"]} },
	SharedBytes: func(p map[string]int) int { return 4 * p["TG"] },
	Geometry: func(shape []int, p map[string]int) Launch {
		return Launch{Grid: [2]int{ceilDiv(shape[1], p["TG"]/p["TPR"]), 1}, Threads: p["TG"]}
	},
	Scalars: func(c kernels.Case, _ map[string]float64) []any {
		hb := int32(0)
		if c.Has(kernels.Bias) {
			hb = 1
		}
		return []any{int32(c.Shape[1]), int32(c.Shape[2]), hb}
	},
}
