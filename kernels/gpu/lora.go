package gpu

import (
	"github.com/kerntune/kerntune/kernels"
)

// loraRankMax is the largest rank lora takes (params/families/lora.json):
// the row stride of the rank-r projection in threadgroup memory.
const loraRankMax = 64

// loraSource: y = x·Wᵀ + s·((x·Aᵀ)·Bᵀ) (+ bias). A threadgroup owns a tile
// of BM rows of x by NCOL = (TG/TPR/KS)·CPS rows of W (output columns).
// Its work is NCOL + r dot products over k (its rows of W and every row of
// A, so that the rank-r projection t = x·Aᵀ needs no second pass), taken
// CPS rows at a time and each cut into KS chunks of k: units of CPS rows ×
// one chunk, dealt round-robin to the segments of TPR threads. A segment
// splits its chunk between its threads with VEC-wide aligned loads (UNROLL
// of them in flight per row), uses each load of x for its CPS rows and each
// load of a row for all BM rows of x, reduces within the SIMD-group and
// keeps the unit's partial sums in threadgroup memory. Then the
// threadgroup adds up the chunks: first t (scaled by s), then each output,
// to which it adds t·B[j,:]ᵀ and the bias. KS > 1 trades the length of each
// segment's chain of loads for more of them in flight, where k is long and
// the threadgroups few. Rows of x past m, of W past n and of A past r are
// read clamped to the last one and not stored; every output of the tile is
// written by one thread. B's rows are read VEC at a time: VEC divides every
// rank lora takes.
const loraSource = `
#define NSEG (NTHREADS / TPR)
#define WG (NSEG / KS)
#define NCOL (WG * CPS)
#define KT_LORA_DOT(M, k0, k1) { \
    const int ke = (k1); \
    int c = (k0) + sl * VEC; \
    for (; c + (UNROLL - 1) * step + VEC <= ke; c += UNROLL * step) { \
      float w[UNROLL][CPS][VEC]; \
      UNROLL_LOOP \
      for (int u = 0; u < UNROLL; ++u) { \
        UNROLL_LOOP \
        for (int h = 0; h < CPS; ++h) LOADV(M, base[h] + c + u * step, w[u][h]); \
      } \
      UNROLL_LOOP \
      for (int u = 0; u < UNROLL; ++u) { \
        UNROLL_LOOP \
        for (int i = 0; i < BM; ++i) { \
          float xv[VEC]; \
          LOADV(x, xoff[i] + c + u * step, xv); \
          UNROLL_LOOP \
          for (int h = 0; h < CPS; ++h) { \
            UNROLL_LOOP \
            for (int v = 0; v < VEC; ++v) acc[h][i] = FMA(w[u][h][v], xv[v], acc[h][i]); \
          } \
        } \
      } \
    } \
    for (; c < ke; c += step) { \
      float w1[CPS][VEC]; \
      UNROLL_LOOP \
      for (int h = 0; h < CPS; ++h) LOADV(M, base[h] + c, w1[h]); \
      UNROLL_LOOP \
      for (int i = 0; i < BM; ++i) { \
        float xv[VEC]; \
        LOADV(x, xoff[i] + c, xv); \
        UNROLL_LOOP \
        for (int h = 0; h < CPS; ++h) { \
          UNROLL_LOOP \
          for (int v = 0; v < VEC; ++v) acc[h][i] = FMA(w1[h][v], xv[v], acc[h][i]); \
        } \
      } \
    } \
  }
  const int seg = LID / TPR, sl = LID % TPR;
  const int step = TPR * VEC;
  const int row0 = GROUP_Y * BM;
  const int col0 = GROUP_X * NCOL;
  // Each chunk a whole number of vectors, so that its loads stay aligned.
  const int kc = ((k / VEC + KS - 1) / KS) * VEC;
  SHARED(float, red, NTHREADS);
  SHARED(float, part, (NCOL + RMAX) * KS * BM);
  SHARED(float, tsh, BM * RMAX);
  int xoff[BM];
  UNROLL_LOOP
  for (int i = 0; i < BM; ++i) xoff[i] = min(row0 + i, m - 1) * k;
  // Unit u: rows g·CPS.. of the tile's dot products (of W for g < WG, of
  // A above), chunk u % KS. The loop's trip count is the threadgroup's, so
  // that every thread reaches each reduction.
  const int units = (WG + (r + CPS - 1) / CPS) * KS;
  for (int u0 = 0; u0 < units; u0 += NSEG) {
    const int u = u0 + seg;
    const int g = u / KS;
    const int k0 = (u % KS) * kc, k1 = min(k, k0 + kc);
    float acc[CPS][BM];
    int base[CPS];
    UNROLL_LOOP
    for (int h = 0; h < CPS; ++h) {
      base[h] = g < WG ? min(col0 + g * CPS + h, n - 1) * k : min((g - WG) * CPS + h, r - 1) * k;
      UNROLL_LOOP
      for (int i = 0; i < BM; ++i) acc[h][i] = 0.0f;
    }
    if (u < units) {
      if (g < WG) KT_LORA_DOT(W, k0, k1)
      else KT_LORA_DOT(A, k0, k1)
    }
    UNROLL_LOOP
    for (int h = 0; h < CPS; ++h) {
      const int d = g * CPS + h;
      UNROLL_LOOP
      for (int i = 0; i < BM; ++i) {
        const float v = SEG_SUM(acc[h][i], TPR, red);
        if (u < units && sl == 0 && d < NCOL + r) part[(d * KS + u % KS) * BM + i] = v;
      }
    }
  }
  BARRIER();
  // t = s·x·Aᵀ for the row block: the sum of each rank's chunks.
  for (int e = LID; e < BM * r; e += NTHREADS) {
    const int i = e / r, q = e % r;
    float s = 0.0f;
    for (int z = 0; z < KS; ++z) s += part[((NCOL + q) * KS + z) * BM + i];
    tsh[i * RMAX + q] = scale * s;
  }
  BARRIER();
  // Consecutive threads take consecutive outputs of a row of y.
  for (int e = LID; e < BM * NCOL; e += NTHREADS) {
    const int i = e / NCOL, d = e % NCOL, j = col0 + d;
    if (j < n && row0 + i < m) {
      float s = 0.0f;
      for (int z = 0; z < KS; ++z) s += part[(d * KS + z) * BM + i];
      for (int q = 0; q < r; q += VEC) {
        float b[VEC];
        LOADV(B, j * r + q, b);
        UNROLL_LOOP
        for (int v = 0; v < VEC; ++v) s = FMA(tsh[i * RMAX + q + v], b[v], s);
      }
      STORE(y, (row0 + i) * n + j, has_bias != 0 ? s + LOAD(bias, j) : s);
    }
  }`

func init() { AddBuiltin(loraBody) }

// loraKS reads KS, which entries written before it lack: one chunk of k,
// the kernel they were tuned with.
func loraKS(p map[string]int) int { return max(p["KS"], 1) }

// loraCols is a threadgroup's rows of W (output columns), NCOL.
func loraCols(p map[string]int) int { return p["TG"] / p["TPR"] / loraKS(p) * p["CPS"] }

var loraBody = &Body{
	Family: "lora", Func: "kt_lora",
	Args: []Arg{{"x", In}, {"W", In}, {"A", In}, {"B", In}, {"bias", In}, {"y", Out},
		{"m", Int}, {"n", Int}, {"k", Int}, {"r", Int}, {"has_bias", Int}, {"scale", Float}},
	Source: loraSource,
	Defines: func(p map[string]int) map[string]int {
		return map[string]int{"NTHREADS": p["TG"], "RMAX": loraRankMax, "KS": loraKS(p)}
	},
	SharedBytes: func(p map[string]int) int {
		return 4 * (p["TG"] + (loraCols(p)+loraRankMax)*loraKS(p)*p["BM"] + p["BM"]*loraRankMax)
	},
	Geometry: func(shape []int, p map[string]int) Launch {
		return Launch{Grid: [2]int{ceilDiv(shape[1], max(loraCols(p), 1)), ceilDiv(shape[0], p["BM"])}, Threads: p["TG"]}
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
