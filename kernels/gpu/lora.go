package gpu

import (
	"github.com/kerntune/kerntune/kernels"
)

// loraRankMax is the largest rank lora takes (params/families/lora.json):
// the row stride of the rank-r projection in threadgroup memory.
const loraRankMax = 64

// loraSource: y = x·Wᵀ + s·((x·Aᵀ)·Bᵀ) (+ bias). A threadgroup owns a tile
// of BM rows of x by (TG/TPR)·CPS rows of W (output columns). It first
// computes the row block's rank-r projection t = x·Aᵀ (BM×r, f32) into
// threadgroup memory, once, then streams its rows of W as gemv_nt does:
// segments of TPR threads own one row of W at a time, split k between
// them with VEC-wide aligned loads (UNROLL of them in flight) and use each
// load of W for all BM rows of x; each lane adds its share of the ranks of
// s·t·B[j,:]ᵀ before the segment's reduction, so the low-rank term costs
// no separate pass. Rows of x past m are read clamped to the last row and
// not stored. The reductions stay within a SIMD-group (TPR ≤ 32) and every
// thread reaches each of them (the loops around them are uniform).
const loraSource = `
#define NSEG (NTHREADS / TPR)
#define KT_LORA_DOT(M, base) { \
    const int b0 = (base); \
    int c = sl * VEC; \
    for (; c + (UNROLL - 1) * step + VEC <= k; c += UNROLL * step) { \
      float w[UNROLL][VEC]; \
      UNROLL_LOOP \
      for (int u = 0; u < UNROLL; ++u) LOADV(M, b0 + c + u * step, w[u]); \
      UNROLL_LOOP \
      for (int u = 0; u < UNROLL; ++u) { \
        UNROLL_LOOP \
        for (int i = 0; i < BM; ++i) { \
          float xv[VEC]; \
          LOADV(x, xoff[i] + c + u * step, xv); \
          UNROLL_LOOP \
          for (int v = 0; v < VEC; ++v) acc[i] = FMA(w[u][v], xv[v], acc[i]); \
        } \
      } \
    } \
    for (; c < k; c += step) { \
      float w1[VEC]; \
      LOADV(M, b0 + c, w1); \
      UNROLL_LOOP \
      for (int i = 0; i < BM; ++i) { \
        float xv[VEC]; \
        LOADV(x, xoff[i] + c, xv); \
        UNROLL_LOOP \
        for (int v = 0; v < VEC; ++v) acc[i] = FMA(w1[v], xv[v], acc[i]); \
      } \
    } \
  }
  const int seg = LID / TPR, sl = LID % TPR;
  const int step = TPR * VEC;
  const int row0 = GROUP_Y * BM;
  const int col0 = GROUP_X * (NSEG * CPS);
  SHARED(float, red, NTHREADS);
  SHARED(float, tsh, BM * RMAX);
  int xoff[BM];
  UNROLL_LOOP
  for (int i = 0; i < BM; ++i) xoff[i] = min(row0 + i, m - 1) * k;
  // t = x·Aᵀ for the row block: segment seg computes ranks seg, seg + NSEG, ...
  for (int q0 = 0; q0 < r; q0 += NSEG) {
    const int q = q0 + seg;
    float acc[BM];
    UNROLL_LOOP
    for (int i = 0; i < BM; ++i) acc[i] = 0.0f;
    if (q < r) KT_LORA_DOT(A, q * k)
    UNROLL_LOOP
    for (int i = 0; i < BM; ++i) {
      const float v = SEG_SUM(acc[i], TPR, red);
      if (q < r && sl == 0) tsh[i * RMAX + q] = v;
    }
  }
  BARRIER();
  for (int cc = 0; cc < CPS; ++cc) {
    const int j = col0 + cc * NSEG + seg;
    float acc[BM];
    UNROLL_LOOP
    for (int i = 0; i < BM; ++i) acc[i] = 0.0f;
    if (j < n) {
      KT_LORA_DOT(W, j * k)
      for (int q = sl; q < r; q += TPR) {
        const float b = scale * LOAD(B, j * r + q);
        UNROLL_LOOP
        for (int i = 0; i < BM; ++i) acc[i] = FMA(tsh[i * RMAX + q], b, acc[i]);
      }
    }
    UNROLL_LOOP
    for (int i = 0; i < BM; ++i) {
      const float v = SEG_SUM(acc[i], TPR, red);
      if (j < n && sl == 0 && row0 + i < m) STORE(y, (row0 + i) * n + j, has_bias != 0 ? v + LOAD(bias, j) : v);
    }
  }`

func init() { AddBuiltin(loraBody) }

var loraBody = &Body{
	Family: "lora", Func: "kt_lora",
	Args: []Arg{{"x", In}, {"W", In}, {"A", In}, {"B", In}, {"bias", In}, {"y", Out},
		{"m", Int}, {"n", Int}, {"k", Int}, {"r", Int}, {"has_bias", Int}, {"scale", Float}},
	Source: loraSource,
	Defines: func(p map[string]int) map[string]int {
		return map[string]int{"NTHREADS": p["TG"], "RMAX": loraRankMax}
	},
	SharedBytes: func(p map[string]int) int { return 4 * (p["TG"] + p["BM"]*loraRankMax) },
	Geometry: func(shape []int, p map[string]int) Launch {
		cols := p["TG"] / p["TPR"] * p["CPS"]
		return Launch{Grid: [2]int{ceilDiv(shape[1], cols), ceilDiv(shape[0], p["BM"])}, Threads: p["TG"]}
	},
	Scalars: func(c kernels.Case, consts map[string]float64) []any {
		hb := int32(0)
		if c.Has(kernels.Bias) {
			hb = 1
		}
		s := c.Shape
		return []any{int32(s[0]), int32(s[1]), int32(s[2]), int32(s[3]), hb, float32(consts["scale"])}
	},
}
