package gpu

import (
	mbits "math/bits"

	"github.com/kerntune/kerntune/kernels"
)

// qgemvStage is the x values of one row qgemv stages in threadgroup memory
// at a time: 4 KB of f32 (or about 2 KB of f16 pairs) and at most 1 KB of
// word sums, a multiple of every group's words. With MR rows of x a pass
// the rows together stage at most qgemvStageRows values (16 KB of f32), so
// that a threadgroup fits in 32 KB at every MR.
const (
	qgemvStage     = 1024
	qgemvStageRows = 4096
)

// qgemvXC is the values of each row of x a threadgroup stages at a time
// with mr rows of x a pass.
func qgemvXC(mr int) int { return min(qgemvStage, qgemvStageRows/max(mr, 1)) }

// qgemvSource: y = x·dequant(W)ᵀ (+ bias), x of m rows, W in MLX's affine
// layout: bits-bit values packed into uint32 words along k from the lowest
// bits up, a scale and a bias per group of values. Segments of TPR threads
// own RPT adjacent rows of W each, RPB segments per threadgroup; a thread
// reads VEC words of each of its rows at a time (all in one group), UNROLL
// such steps loaded before any is used, and dequantises per group,
// s·Σ x·q + β·Σ x; then each segment reduces.
//
// A threadgroup serves MR rows of x (a pass; the grid's y is the passes,
// ⌈m/MR⌉): each word is dequantised once and multiplied with the staged
// values of every row of its pass, whose sums are registers ([MR][RPT]), so
// that at m ≤ MR the weights are read once. Rows of a partial pass past m
// are staged as zeros and not stored (at MR = 1 the grid has no partial
// pass: the checks fold away). At MR = 1 every loop over rows of x has one
// trip, unrolled, and the arrays one element, so that the word loop of
// m = 1 is the one of the body before it had rows of x; what m = 1 gains
// is the row offsets of x and y, once per staged word and per output.
//
// x is staged in threadgroup memory (padded: XI), XC values of each row
// at a time, a row of x every XR floats, as
// f32 and pre-scaled by 2^-(bits·j) for the j-th value of each 16-bit half
// of its word, with the sum of each word's x beside it. A value then needs
// no shift: x'·float(w & (mask << bits·j)) = x·q exactly, and where an
// integer-to-float conversion is slow (CUDA) QM2F(w, mask) makes the float
// with a mask, an OR and one subtraction. CUDA with 16-bit activations
// (KT_QH2, f16 and bf16) stages x as f16 pairs instead at 4 and 8 bits and
// dequantises two centred values in two instructions (the 0x6400 magic),
// multiplying and adding them in a third (kt_qdeq*h and kt_qdot*h of the
// prelude); a step's sum is in f16, the rest in f32. A step's scale and bias
// multiply its sums once: s·Σ x·q + β·Σ x.
//
// Each step's scales and biases are requested with its weights, and the
// first step's (and the row's bias) before the staging, so that no load
// waits for another's latency. bits is a run-time argument; the switch
// selects a loop with it constant (uniform across the grid, so the
// barriers inside are reached by every thread), and gshift is log2 of the
// words per group.
const qgemvSource = `
/* x's staged index i in xsh: 4 floats of padding after every 32, so that
   the lanes of a segment, 32·VEC values apart at VEC = 4, read different
   banks (without it, 2 lanes a bank at TPR=2 and 8 at TPR=32), while the
   values of one word stay 16-byte aligned and contiguous. */
#define XI(i) ((i) + (((i) >> 5) << 2))
/* One word's staging (its values xv, in order, at local word wl) and its
   dot with RPT rows' words ws[r][v] into xq[r], per value width. The f32
   form: x pre-scaled by 2^-(QB·j) for the j-th value of each 16-bit half,
   times the masked word as a float (QM2F). The word dotted is wl0 + v,
   wl0 a multiple of VEC (a step's first word): its staged index is then
   XI(wl0·per) + XI(v·per) (and XH(wl0) + XH(v)), because the VEC·per
   values of a step lie within one run of 32 or start one, so that the
   index of the step is computed once and each word's is a constant
   offset from it (computed whole for each word, the index cost about 4.6
   PTX instructions a word; docs/results/cuda-h100-h200.md). */
#define KT_QSTAGE_F(QB, i, wl, xv) { \
    UNROLL_LOOP \
    for (int j = 0; j < 32 / QB; ++j) \
      xsh[(i) * XR + XI((wl) * (32 / QB) + j)] = xv[j] * (1.0f / (float)(1u << (QB * (j % (16 / QB))))); \
  }
/* Each value made a float once, for the MR rows of x. */
#define KT_QWORD_F(QB, wl0, ws, v) { \
    const int xo = XI((wl0) * (32 / QB)) + XI((v) * (32 / QB)); \
    const unsigned int qm = (1u << QB) - 1u; \
    UNROLL_LOOP \
    for (int r = 0; r < RPT; ++r) { \
      const unsigned int lo = ws[r][v], hi = lo >> 16; \
      UNROLL_LOOP \
      for (int j = 0; j < 16 / QB; ++j) { \
        const float ql = QM2F(lo, qm << (QB * j)), qh = QM2F(hi, qm << (QB * j)); \
        UNROLL_LOOP \
        for (int i = 0; i < MR; ++i) { \
          xq[i][r] = FMA(xsh[i * XR + xo + j], ql, xq[i][r]); \
          xq[i][r] = FMA(xsh[i * XR + xo + 16 / QB + j], qh, xq[i][r]); \
        } \
      } \
    } \
  }
#ifdef KT_QH2
/* CUDA, f16 and bf16, 4 and 8 bits: x as f16 pairs, 16/QB 32-bit pairs a
   word in the order of kt_qdeq*h, pair j of a byte times
   2^-(KT_QXS + QB·j), at XH(wl, 16/QB) (4 of padding after every 32, as
   XI), so that a step's words are one shared load each (16 bytes at 4
   bits, 8 at 8) at a constant offset from the step's first, and each
   dequantises two values in 2 instructions (kt_qdeq*h, once for the MR
   rows of x) and multiplies and adds them in a third (kt_qdot*h, per row
   of x) into the rows' f16 pair hq[i][r]. The f16 sum of a step holds at
   most VEC·16/QB values a half (16 at 4 bits and VEC = 4); each of its
   fmas rounds the centred product's running sum once (a relative 2^-11).
   2 bits keep the f32 form: 32 values a half summed in f16 erred past
   f16's tolerance (1e-3) on one draw in 200 of the one-output odd shape.
   KT_QEND adds the pair in f32, scales it back and un-centres it with
   2^(QB−1)·Σx. */
#define XH(wl, pw) ((pw) * (wl) + ((((pw) * (wl)) >> 5) << 2))
#define KT_QSTAGE_H(QB, i, wl, xv) { \
    unsigned int* xp = reinterpret_cast<unsigned int*>(xsh) + (i) * XR + XH(wl, 16 / QB); \
    UNROLL_LOOP \
    for (int j = 0; j < 8 / QB; ++j) { \
      const float f = KT_QSC(QB) * (1.0f / (float)(1u << (QB * j))); \
      UNROLL_LOOP \
      for (int h = 0; h < 2; ++h) \
        xp[h * (8 / QB) + j] = KT_QPACK(xv[h * (8 / QB) + j] * f, xv[h * (8 / QB) + j + 16 / QB] * f); \
    } \
  }
#define KT_QSTAGE_2(i, wl, xv) KT_QSTAGE_F(2, i, wl, xv)
#define KT_QSTAGE_4(i, wl, xv) KT_QSTAGE_H(4, i, wl, xv)
#define KT_QSTAGE_8(i, wl, xv) KT_QSTAGE_H(8, i, wl, xv)
#define KT_QXH(i, wl0, v, pw) (reinterpret_cast<const unsigned int*>(xsh) + (i) * XR + XH(wl0, pw) + XH(v, pw))
#define KT_QWORD_2(wl0, ws, v) KT_QWORD_F(2, wl0, ws, v)
#define KT_QWORD_4(wl0, ws, v) { \
    uint4 q[RPT]; \
    UNROLL_LOOP \
    for (int r = 0; r < RPT; ++r) q[r] = kt_qdeq4h(ws[r][v]); \
    UNROLL_LOOP \
    for (int i = 0; i < MR; ++i) { \
      const uint4 xp = *reinterpret_cast<const uint4*>(KT_QXH(i, wl0, v, 4)); \
      UNROLL_LOOP \
      for (int r = 0; r < RPT; ++r) hq[i][r] = kt_qdot4h(q[r], xp, hq[i][r]); \
    } \
  }
#define KT_QWORD_8(wl0, ws, v) { \
    uint2 q[RPT]; \
    UNROLL_LOOP \
    for (int r = 0; r < RPT; ++r) q[r] = kt_qdeq8h(ws[r][v]); \
    UNROLL_LOOP \
    for (int i = 0; i < MR; ++i) { \
      const uint2 xp = *reinterpret_cast<const uint2*>(KT_QXH(i, wl0, v, 2)); \
      UNROLL_LOOP \
      for (int r = 0; r < RPT; ++r) hq[i][r] = kt_qdot8h(q[r], xp, hq[i][r]); \
    } \
  }
#define KT_QBEGIN unsigned int hq[MR][RPT]; UNROLL_LOOP for (int i = 0; i < MR; ++i) { UNROLL_LOOP for (int r = 0; r < RPT; ++r) hq[i][r] = 0u; }
#define KT_QEND(QB) KT_QEND_ ## QB
#define KT_QEND_H(QB) UNROLL_LOOP for (int i = 0; i < MR; ++i) { UNROLL_LOOP for (int r = 0; r < RPT; ++r) xq[i][r] = FMA(KT_QH2F(hq[i][r]), (float)(1 << KT_QXS(QB)), (float)(1 << (QB - 1)) * xs[i]); }
#define KT_QEND_2
#define KT_QEND_4 KT_QEND_H(4)
#define KT_QEND_8 KT_QEND_H(8)
/* x's scale 2^-KT_QXS(QB): headroom so that no f16 sum of a step (at most
   64/QB centred products, each below 2^(QB−1)·|x|·2^-KT_QXS) overflows for
   |x| below 2^11 (f16) or 2^15 (bf16), the same bound at every width. */
#define KT_QXS(QB) (KT_QXS0 + ((QB) == 8 ? 3 : 0))
#define KT_QSC(QB) (1.0f / (float)(1 << KT_QXS(QB)))
#else
#define KT_QSTAGE_2(i, wl, xv) KT_QSTAGE_F(2, i, wl, xv)
#define KT_QSTAGE_4(i, wl, xv) KT_QSTAGE_F(4, i, wl, xv)
#define KT_QSTAGE_8(i, wl, xv) KT_QSTAGE_F(8, i, wl, xv)
#define KT_QWORD_2(wl0, ws, v) KT_QWORD_F(2, wl0, ws, v)
#define KT_QWORD_4(wl0, ws, v) KT_QWORD_F(4, wl0, ws, v)
#define KT_QWORD_8(wl0, ws, v) KT_QWORD_F(8, wl0, ws, v)
#define KT_QBEGIN
#define KT_QEND(QB)
#endif
#define KT_QLOAD(C, WV, SV, BV) { \
    UNROLL_LOOP \
    for (int u = 0; u < UNROLL; ++u) { \
      UNROLL_LOOP \
      for (int r = 0; r < RPT; ++r) { \
        if (row0 + r < n && (C) + u * step < ce) { \
          LOADW(w, (row0 + r) * kw + (C) + u * step, WV[u][r]); \
          const int g = (row0 + r) * groups + (((C) + u * step) >> gshift); \
          SV[u][r] = LOAD(scales, g); \
          BV[u][r] = LOAD(biases, g); \
        } else { \
          UNROLL_LOOP \
          for (int v = 0; v < VEC; ++v) WV[u][r][v] = 0u; \
          SV[u][r] = 0.0f; \
          BV[u][r] = 0.0f; \
        } \
      } \
    } \
  }
/* UNROLL steps from word C on, their words, scales and biases in WV, SV
   and BV: s·Σ x·q + β·Σ x into acc, for each row of x. */
#define KT_QSTEPS(QB, C, WV, SV, BV) { \
    UNROLL_LOOP \
    for (int u = 0; u < UNROLL; ++u) { \
      const int cw = (C) + u * step; \
      if (cw < ce) { \
        float xq[MR][RPT], xs[MR]; \
        UNROLL_LOOP \
        for (int i = 0; i < MR; ++i) { \
          xs[i] = 0.0f; \
          UNROLL_LOOP \
          for (int r = 0; r < RPT; ++r) xq[i][r] = 0.0f; \
        } \
        KT_QBEGIN \
        UNROLL_LOOP \
        for (int v = 0; v < VEC; ++v) { \
          UNROLL_LOOP \
          for (int i = 0; i < MR; ++i) xs[i] += xws[i * (XC / 4) + cw - cb + v]; \
          KT_QWORD_ ## QB(cw - cb, WV[u], v) \
        } \
        KT_QEND(QB) \
        UNROLL_LOOP \
        for (int i = 0; i < MR; ++i) { \
          UNROLL_LOOP \
          for (int r = 0; r < RPT; ++r) acc[i][r] = FMA(SV[u][r], xq[i][r], FMA(BV[u][r], xs[i], acc[i][r])); \
        } \
      } \
    } \
  }
#define KT_QDOT(QB) { \
    const int per = 32 / QB; \
    const int cwords = XC / per; \
    unsigned int wv[UNROLL][RPT][VEC]; \
    float sv[UNROLL][RPT], bv[UNROLL][RPT]; \
    for (int cb = 0; cb < kw; cb += cwords) { \
      const int ce = min(cb + cwords, kw); \
      /* the weights of this chunk's first steps, in flight during the staging */ \
      const int c0 = cb + sl * VEC; \
      KT_QLOAD(c0, wv, sv, bv) \
      BARRIER(); \
      for (int wd = cb + LID; wd < ce; wd += NTHREADS) { \
        UNROLL_LOOP \
        for (int i = 0; i < MR; ++i) { \
          float xv[32 / QB], sum = 0.0f; \
          if (MR == 1 || xr0 + i < m) { \
            UNROLL_LOOP \
            for (int j4 = 0; j4 < per; j4 += 4) LOADX4(x, (xr0 + i) * k + wd * per + j4, xv + j4); \
          } else { \
            UNROLL_LOOP \
            for (int j = 0; j < per; ++j) xv[j] = 0.0f; \
          } \
          UNROLL_LOOP \
          for (int j = 0; j < per; ++j) sum += xv[j]; \
          KT_QSTAGE_ ## QB(i, wd - cb, xv) \
          xws[i * (XC / 4) + wd - cb] = sum; \
        } \
      } \
      BARRIER(); \
      for (int c = c0; c < ce; c += UNROLL * step) { \
        if (c != c0) KT_QLOAD(c, wv, sv, bv) \
        KT_QSTEPS(QB, c, wv, sv, bv) \
      } \
    } \
  }
  const int seg = LID / TPR, sl = LID % TPR;
  const int row0 = (GROUP_X * RPB + seg) * RPT;
  /* the pass's first row of x */
  const int xr0 = GROUP_Y * MR;
  SHARED(float, red, NTHREADS);
  SHARED(float, xsh, MR * XR);
  SHARED(float, xws, MR * (XC / 4));
  float acc[MR][RPT], yb[RPT];
  UNROLL_LOOP
  for (int r = 0; r < RPT; ++r) {
    UNROLL_LOOP
    for (int i = 0; i < MR; ++i) acc[i][r] = 0.0f;
    /* the bias, requested now so that its latency is not paid after the reduction */
    yb[r] = has_bias != 0 && sl == 0 && row0 + r < n ? LOAD(bias, row0 + r) : 0.0f;
  }
  const int kw = k / (32 / bits);
  const int step = TPR * VEC;
  if (bits == 4) KT_QDOT(4)
  else if (bits == 8) KT_QDOT(8)
  else KT_QDOT(2)
  UNROLL_LOOP
  for (int i = 0; i < MR; ++i) {
    UNROLL_LOOP
    for (int r = 0; r < RPT; ++r) {
      const float s = SEG_SUM(acc[i][r], TPR, red);
      if (row0 + r < n && (MR == 1 || xr0 + i < m) && sl == 0) STORE(y, (xr0 + i) * n + row0 + r, s + yb[r]);
    }
  }`

func init() { AddBuiltin(qgemvBody) }

var qgemvBody = &Body{
	Family: "qgemv", Func: "kt_qgemv",
	Args: []Arg{{"x", In}, {"w", Words}, {"scales", In}, {"biases", In}, {"bias", In}, {"y", Out},
		{"n", Int}, {"k", Int}, {"bits", Int}, {"groups", Int}, {"gshift", Int}, {"has_bias", Int}, {"m", Int}},
	Source: qgemvSource,
	Defines: func(p map[string]int) map[string]int {
		xc := qgemvXC(p["MR"])
		return map[string]int{"NTHREADS": p["TPR"] * p["RPB"], "XC": xc, "XR": xc + xc/8}
	},
	SharedBytes: func(p map[string]int) int {
		mr, xc := max(p["MR"], 1), qgemvXC(p["MR"])
		return 4 * (p["TPR"]*p["RPB"] + mr*(xc+xc/8+xc/4))
	},
	// Passes in y: a pass's threadgroups for all rows of W run before the
	// next pass's (x varies fastest).
	Geometry: func(shape []int, p map[string]int) Launch {
		return Launch{Grid: [2]int{ceilDiv(shape[1], p["RPB"]*p["RPT"]), ceilDiv(shape[0], max(p["MR"], 1))}, Threads: p["TPR"] * p["RPB"]}
	},
	Scalars: func(c kernels.Case, _ map[string]float64) []any {
		m, n, k, bits, g := c.Shape[0], c.Shape[1], c.Shape[2], c.Shape[3], c.Shape[4]
		hb := int32(0)
		if c.Has(kernels.Bias) {
			hb = 1
		}
		return []any{int32(n), int32(k), int32(bits), int32(k / g), int32(mbits.TrailingZeros(uint(g * bits / 32))), hb, int32(m)}
	},
}
