package gpu

import (
	"github.com/kerntune/kerntune/kernels"
)

// rmsnormSource: one segment of TPR threads per row; sum of squares with
// VEC-wide loads and UNROLL accumulators, a segment reduction, then the
// scaled write with VEC-wide streaming stores (the output is written once).
// With KEEP=1 the row fits one pass (cols ≤ TPR·VEC·UNROLL): its values stay
// in registers and the write pass reads only the weights.
const rmsnormSource = rowSegmentHead + rowKeepLoad + `  float acc[UNROLL];
  UNROLL_LOOP
  for (int u = 0; u < UNROLL; ++u) acc[u] = 0.0f;
  if (live && KEEP) {
    UNROLL_LOOP
    for (int u = 0; u < UNROLL; ++u) {
      if (sl * VEC + u * step < cols) {
        UNROLL_LOOP
        for (int j = 0; j < VEC; ++j) acc[u] = FMA(v[u][j], v[u][j], acc[u]);
      }
    }
  } else if (live) {
    int c = sl * VEC;
    for (; c + (UNROLL - 1) * step < cols; c += UNROLL * step) {
      UNROLL_LOOP
      for (int u = 0; u < UNROLL; ++u) {
        float v[VEC];
        LOADV(x, base + c + u * step, v);
        UNROLL_LOOP
        for (int j = 0; j < VEC; ++j) acc[u] = FMA(v[j], v[j], acc[u]);
      }
    }
    for (; c < cols; c += step) {
      float v[VEC];
      LOADV(x, base + c, v);
      UNROLL_LOOP
      for (int j = 0; j < VEC; ++j) acc[0] = FMA(v[j], v[j], acc[0]);
    }
  }
  float ss = 0.0f;
  UNROLL_LOOP
  for (int u = 0; u < UNROLL; ++u) ss += acc[u];
  ss = SEG_SUM(ss, TPR, red);
  if (live) {
    const float inv = RSQRT(ss / (float)cols + eps);
    if (KEEP) {
      UNROLL_LOOP
      for (int u = 0; u < UNROLL; ++u) {
        const int c = sl * VEC + u * step;
        if (c < cols) {
          float g[VEC];
          LOADV(w, c, g);
          UNROLL_LOOP
          for (int j = 0; j < VEC; ++j) v[u][j] = v[u][j] * inv * g[j];
          STOREV_STREAM(y, base + c, v[u]);
        }
      }
    } else {
      for (int c = sl * VEC; c < cols; c += step) {
        float t[VEC], g[VEC];
        LOADV(x, base + c, t);
        LOADV(w, c, g);
        UNROLL_LOOP
        for (int j = 0; j < VEC; ++j) t[j] = t[j] * inv * g[j];
        STOREV_STREAM(y, base + c, t);
      }
    }
  }`

func init() { AddBuiltin(rmsnormBody) }

var rmsnormBody = rowBody("rmsnorm", "kt_rmsnorm", rmsnormSource,
	[]Arg{{"x", In}, {"w", In}, {"y", Out}, {"rows", Int}, {"cols", Int}, {"eps", Float}},
	func(c kernels.Case, consts map[string]float64) []any {
		return []any{int32(c.Shape[0]), int32(c.Shape[1]), float32(consts["eps"])}
	})
