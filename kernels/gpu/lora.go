package gpu

import (
	"fmt"

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
//
// With MMA=1 the dot products run on the matrix units: each SIMD-group
// owns 16 rows of W (or of A: the last ⌈r/16⌉ groups of 16 rows of the
// tile, so NCOL = 16·((TG/32/KS)·CPS − ⌈r/16⌉) depends on r) and one of
// the KS chunks of k, and multiplies them by x's row block (padded to a
// fragment's width, zero past m) through a ring of LORA_STAGES threadgroup
// stages, LORA_KT deep in k: the copies of a stage (cp.async on CUDA) are
// issued two stages ahead of the one multiplied, one barrier per stage.
// x is copied transposed (k-major, as FRAG_LOAD_B reads it), which is why
// the body converts elements itself (KT_LORA_TILE). The fragments' float
// partial sums go to threadgroup memory in the layout the MMA=0 path
// uses, and the same sums over chunks, projection, B and bias follow.
const loraSource = `
#if MMA
#define NW (NTHREADS / 32)
#define NSLOT (NW / KS)
#define BMF ((BM + FRAG_N - 1) / FRAG_N * FRAG_N)
#define PBM BMF
#define LDW (LORA_KT + SPAD_A)
#define LDX (BMF + SPAD_B)
#define WTILE (16 * LDW)
#define XTILE (LORA_KT * LDX)
#define STAGE_ELEMS (NW * WTILE + KS * XTILE)
#define KT_CLAMP(v, lo, hi) ((v) < (lo) ? (lo) : (v) > (hi) ? (hi) : (v))
// An element of x into a fragment tile: the tiles hold T itself on CUDA,
// KT_TILE (converted through float) on Metal.
#ifdef __METAL_VERSION__
#define KT_LORA_TILE(p, i) ((SMEM_T)LOAD(p, i))
#define KT_LORA_ZERO ((SMEM_T)0.0f)
#else
#define KT_LORA_TILE(p, i) ((p)[i])
#define KT_LORA_ZERO ((T)0)
#endif
  // The ring, then the float partial sums (dynamic on CUDA: past 48 KiB).
  SHARED_DYN(SMEM_T, ring, LORA_STAGES * STAGE_ELEMS + 16 * NSLOT * CPS * KS * PBM * 4 / (int)sizeof(SMEM_T));
  SHARED_PTR(float) part = (SHARED_PTR(float))(ring + LORA_STAGES * STAGE_ELEMS);
  SHARED(float, tsh, BM * RMAX);
  const int warp = LID / 32, lane = LID % 32;
  const int z = warp % KS, slot = warp / KS;
  const int wg = NSLOT * CPS - (r + 15) / 16;
  const int ncol = 16 * wg;
  const int row0 = GROUP_Y * BM;
  const int col0 = GROUP_X * ncol;
  // Chunks of k start at multiples of 8 elements (16-byte copies).
  const int kc = ((k + KS - 1) / KS + 7) / 8 * 8;
  const int nst = (kc + LORA_KT - 1) / LORA_KT;
  const int k0 = z * kc, k1 = min(k, k0 + kc);
  for (int cr = 0; cr < CPS; ++cr) {
    const int g = cr * NSLOT + slot;
    FRAG_C acc[16 / FRAG_M][BMF / FRAG_N];
    UNROLL_LOOP
    for (int h = 0; h < 16 / FRAG_M; ++h) {
      UNROLL_LOOP
      for (int j = 0; j < BMF / FRAG_N; ++j) FRAG_ZERO(acc[h][j]);
    }
    for (int it = 1 - LORA_STAGES; it < nst; ++it) {
      const int lt = it + LORA_STAGES - 1;
      if (it >= 0) {
        COPY_WAIT(LORA_STAGES - 2);
        BARRIER();
      }
      if (lt < nst) {
        SHARED_PTR(SMEM_T) wt = ring + (lt % LORA_STAGES) * STAGE_ELEMS + warp * WTILE;
        SHARED_PTR(SMEM_T) xt = ring + (lt % LORA_STAGES) * STAGE_ELEMS + NW * WTILE;
        const int kb = k0 + lt * LORA_KT;
        UNROLL_LOOP
        for (int u = 0; u < 16 * LORA_KT / COPY_N / 32; ++u) {
          const int c = lane + u * 32;
          const int rr = c / (LORA_KT / COPY_N), q = (c % (LORA_KT / COPY_N)) * COPY_N;
          const int nv = KT_CLAMP(k1 - kb - q, 0, COPY_N);
          if (g < wg) COPY_CHUNK(wt + rr * LDW + q, W, min(col0 + 16 * g + rr, n - 1) * k + kb + q, nv);
          else COPY_CHUNK(wt + rr * LDW + q, A, min(16 * (g - wg) + rr, r - 1) * k + kb + q, nv);
        }
        // Each chunk's slice of x, transposed (k-major) for FRAG_LOAD_B,
        // zero past the chunk and past the row block.
        for (int e = LID; e < KS * BMF * LORA_KT; e += NTHREADS) {
          const int zz = e / (BMF * LORA_KT), i = (e / LORA_KT) % BMF, kk = e % LORA_KT;
          const int kg = zz * kc + lt * LORA_KT + kk;
          xt[zz * XTILE + kk * LDX + i] = i < BM && kg < min(k, zz * kc + kc) ? KT_LORA_TILE(x, min(row0 + i, m - 1) * k + kg) : KT_LORA_ZERO;
        }
      }
      COPY_COMMIT();
      if (it >= 0) {
        SHARED_PTR(SMEM_T) wt = ring + (it % LORA_STAGES) * STAGE_ELEMS + warp * WTILE;
        SHARED_PTR(SMEM_T) xt = ring + (it % LORA_STAGES) * STAGE_ELEMS + NW * WTILE + z * XTILE;
        UNROLL_LOOP
        for (int kk = 0; kk < LORA_KT; kk += FRAG_K) {
          FRAG_B b[BMF / FRAG_N];
          UNROLL_LOOP
          for (int j = 0; j < BMF / FRAG_N; ++j) FRAG_LOAD_B(b[j], xt + kk * LDX + j * FRAG_N, LDX);
          UNROLL_LOOP
          for (int h = 0; h < 16 / FRAG_M; ++h) {
            FRAG_A a;
            FRAG_LOAD_A(a, wt + h * FRAG_M * LDW + kk, LDW);
            UNROLL_LOOP
            for (int j = 0; j < BMF / FRAG_N; ++j) FRAG_MMA(acc[h][j], a, b[j]);
          }
        }
      }
    }
    // Rows 16g.. of the tile's dot products (W's, then A's from ncol),
    // this chunk: part[(d·KS + z)·PBM + i] for row d and row i of x.
    UNROLL_LOOP
    for (int h = 0; h < 16 / FRAG_M; ++h) {
      UNROLL_LOOP
      for (int j = 0; j < BMF / FRAG_N; ++j) FRAG_STORE_TG(acc[h][j], part + ((16 * g + h * FRAG_M) * KS + z) * PBM + j * FRAG_N, KS * PBM);
    }
    // Every copy landed and every stage read before the ring refills.
    COPY_WAIT(0);
    BARRIER();
  }
#else
#define NSEG (NTHREADS / TPR)
#define WG (NSEG / KS)
#define NCOL (WG * CPS)
#define PBM BM
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
  const int ncol = NCOL;
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
#endif
  BARRIER();
  // t = s·x·Aᵀ for the row block: the sum of each rank's chunks.
  for (int e = LID; e < BM * r; e += NTHREADS) {
    const int i = e / r, q = e % r;
    float s = 0.0f;
    for (int z = 0; z < KS; ++z) s += part[((ncol + q) * KS + z) * PBM + i];
    tsh[i * RMAX + q] = scale * s;
  }
  BARRIER();
  // Consecutive threads take consecutive outputs of a row of y.
  for (int e = LID; e < BM * ncol; e += NTHREADS) {
    const int i = e / ncol, d = e % ncol, j = col0 + d;
    if (j < n && row0 + i < m) {
      float s = 0.0f;
      for (int z = 0; z < KS; ++z) s += part[(d * KS + z) * PBM + i];
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

// loraMMAStages is the MMA=1 body's ring: stages of LORA_KT elements of k
// (32·UNROLL), a 16-row tile of W or A per SIMD-group and KS slices of x
// each, LORA_STAGES − 1 of them in flight while one is multiplied.
const loraMMAStages = 3

// loraMMAKT is the depth of a stage of the ring, LORA_KT.
func loraMMAKT(p map[string]int) int { return 32 * max(p["UNROLL"], 1) }

// loraKS reads KS, which entries written before it lack: one chunk of k,
// the kernel they were tuned with.
func loraKS(p map[string]int) int { return max(p["KS"], 1) }

// loraCols is a threadgroup's rows of W (output columns), NCOL: with MMA=1
// the groups of 16 rows its SIMD-groups hold, less those A's r rows take.
func loraCols(p map[string]int, r int) int {
	if p["MMA"] == 1 {
		return 16 * (p["TG"]/32/loraKS(p)*p["CPS"] - (r+15)/16)
	}
	return p["TG"] / p["TPR"] / loraKS(p) * p["CPS"]
}

// loraFragment is the fragment of an MMA=1 candidate: GEMM's, on CUDA in
// f16 and bf16 only (its matrix units have no f32 mode, and TF32 would
// change f32 results).
func loraFragment(api API, dt kernels.DType) (Fragment, error) {
	if api == CUDA && !dt.Half() {
		return Fragment{}, fmt.Errorf("lora MMA=1 takes f16 or bf16 on CUDA (its matrix units have no f32 mode), not %s; use MMA=0", dt)
	}
	return GemmFragment(api, dt, map[string]int{"BM": 16, "BN": 16, "BK": 16})
}

// loraMMAShared is the MMA=1 body's threadgroup memory in bytes: the ring
// and the float partial sums (dynamic on CUDA), and the projection.
func loraMMAShared(f Fragment, p map[string]int) (dynamic, static int) {
	ks, bm := loraKS(p), p["BM"]
	bmf := (bm + f.N - 1) / f.N * f.N
	kt := loraMMAKT(p)
	stage := p["TG"]/32*16*(kt+f.PadA) + ks*kt*(bmf+f.PadB)
	return loraMMAStages*stage*f.SmemBytes + 4*16*p["TG"]/32*p["CPS"]*bmf, 4 * bm * loraRankMax
}

// loraSIMTShared is the MMA=0 body's threadgroup memory in bytes.
func loraSIMTShared(p map[string]int) int {
	return 4 * (p["TG"] + (loraCols(p, 0)+loraRankMax)*loraKS(p)*p["BM"] + p["BM"]*loraRankMax)
}

var loraBody = &Body{
	Family: "lora", Func: "kt_lora",
	Args: []Arg{{"x", In}, {"W", In}, {"A", In}, {"B", In}, {"bias", In}, {"y", Out},
		{"m", Int}, {"n", Int}, {"k", Int}, {"r", Int}, {"has_bias", Int}, {"scale", Float}},
	Source: loraSource,
	Defines: func(p map[string]int) map[string]int {
		return map[string]int{"NTHREADS": p["TG"], "RMAX": loraRankMax, "KS": loraKS(p), "MMA": p["MMA"],
			"LORA_STAGES": loraMMAStages, "LORA_KT": loraMMAKT(p)}
	},
	APIDefines: func(api API, dt kernels.DType, p map[string]int) (map[string]int, error) {
		if p["MMA"] != 1 {
			return nil, nil
		}
		f, err := loraFragment(api, dt)
		if err != nil {
			return nil, err
		}
		return map[string]int{"FRAG_M": f.M, "FRAG_N": f.N, "FRAG_K": f.K, "SPAD_A": f.PadA, "SPAD_B": f.PadB}, nil
	},
	// The largest over the APIs: Metal's 8-wide fragments and float tiles.
	SharedBytes: func(p map[string]int) int {
		if p["MMA"] == 1 {
			ring, static := loraMMAShared(metalFragment, p)
			return ring + static
		}
		return loraSIMTShared(p)
	},
	SharedBytesAPI: func(api API, dt kernels.DType, p map[string]int) int {
		if p["MMA"] != 1 {
			return loraSIMTShared(p)
		}
		f, err := loraFragment(api, dt)
		if err != nil {
			f = metalFragment
		}
		ring, static := loraMMAShared(f, p)
		return ring + static
	},
	DynamicShared: func(api API, dt kernels.DType, p map[string]int) int {
		if p["MMA"] != 1 || api != CUDA {
			return 0
		}
		f, err := loraFragment(api, dt)
		if err != nil {
			return 0
		}
		ring, _ := loraMMAShared(f, p)
		return ring
	},
	Needs: func(p map[string]int) []Feature {
		if p["MMA"] != 1 {
			return nil
		}
		return []Feature{SIMDMatrix}
	},
	Geometry: func(shape []int, p map[string]int) Launch {
		return Launch{Grid: [2]int{ceilDiv(shape[1], max(loraCols(p, shape[3]), 1)), ceilDiv(shape[0], p["BM"])}, Threads: p["TG"]}
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
