package gpu

import (
	"github.com/kerntune/kerntune/kernels"
)

// softmaxSource: one segment of TPR threads per row, RPB rows per
// threadgroup; an online max/sum pass (VEC-wide aligned loads, UNROLL of them
// in flight), a reduction of (max, sum) across the segment, then a pass that
// writes exp(x − max) / sum with VEC-wide streaming stores (the output is
// written once). With KEEP=1 the row fits one pass (cols ≤ TPR·VEC·UNROLL):
// its values stay in registers as exp(x − the thread's own max), so that
// each element costs one EXP, and the write pass scales them by
// exp(that max − the row's max) / sum and reads nothing.
const softmaxSource = rowSegmentHead + rowKeepLoad + `  float m = NEG_BIG, s = 0.0f;
  if (live && KEEP) {
    UNROLL_LOOP
    for (int u = 0; u < UNROLL; ++u) {
      if (sl * VEC + u * step < cols) {
        UNROLL_LOOP
        for (int j = 0; j < VEC; ++j) m = FMAX(m, v[u][j]);
      }
    }
    UNROLL_LOOP
    for (int u = 0; u < UNROLL; ++u) {
      if (sl * VEC + u * step < cols) {
        UNROLL_LOOP
        for (int j = 0; j < VEC; ++j) {
          v[u][j] = EXP(v[u][j] - m);
          s += v[u][j];
        }
      }
    }
  } else if (live) {
    int c = sl * VEC;
    for (; c + (UNROLL - 1) * step < cols; c += UNROLL * step) {
      UNROLL_LOOP
      for (int u = 0; u < UNROLL; ++u) LOADV(x, base + c + u * step, v[u]);
      float lm = v[0][0];
      UNROLL_LOOP
      for (int u = 0; u < UNROLL; ++u) {
        UNROLL_LOOP
        for (int j = 0; j < VEC; ++j) lm = FMAX(lm, v[u][j]);
      }
      const float nm = FMAX(m, lm);
      s *= EXP(m - nm);
      UNROLL_LOOP
      for (int u = 0; u < UNROLL; ++u) {
        UNROLL_LOOP
        for (int j = 0; j < VEC; ++j) s += EXP(v[u][j] - nm);
      }
      m = nm;
    }
    for (; c < cols; c += step) {
      float t[VEC];
      LOADV(x, base + c, t);
      UNROLL_LOOP
      for (int j = 0; j < VEC; ++j) {
        const float nm = FMAX(m, t[j]);
        s = s * EXP(m - nm) + EXP(t[j] - nm);
        m = nm;
      }
    }
  }
  const float mx = SEG_MAX(m, TPR, red);
  const float rescale = EXP(m - mx);
  s *= rescale;
  const float sum = SEG_SUM(s, TPR, red);
  if (live) {
    const float inv = 1.0f / sum;
    if (KEEP) {
      const float f = rescale * inv;
      UNROLL_LOOP
      for (int u = 0; u < UNROLL; ++u) {
        if (sl * VEC + u * step < cols) {
          UNROLL_LOOP
          for (int j = 0; j < VEC; ++j) v[u][j] *= f;
          STOREV_STREAM(y, base + sl * VEC + u * step, v[u]);
        }
      }
    } else {
      for (int c = sl * VEC; c < cols; c += step) {
        float t[VEC];
        LOADV(x, base + c, t);
        UNROLL_LOOP
        for (int j = 0; j < VEC; ++j) t[j] = EXP(t[j] - mx) * inv;
        STOREV_STREAM(y, base + c, t);
      }
    }
  }`

func init() { AddBuiltin(softmaxBody) }

var softmaxBody = rowBody("softmax", "kt_softmax", softmaxSource,
	[]Arg{{"x", In}, {"y", Out}, {"rows", Int}, {"cols", Int}},
	func(c kernels.Case, _ map[string]float64) []any { return []any{int32(c.Shape[0]), int32(c.Shape[1])} })
