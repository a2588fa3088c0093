package gpu

import (
	"strconv"
	"strings"

	"github.com/kerntune/kerntune/kernels"
)

// gemmSource is the SIMT body shared by gemm_av and gemm_at_b: C[M×N] =
// A'·B[K×N] where A' is A[M×K] (A_TRANS 0) or the transpose of A[K×M]
// (A_TRANS 1). Each threadgroup computes a BM×BN tile; each thread
// accumulates TM×TN outputs in registers: TM adjacent rows, and TN columns
// strided by BN/TN so that neighbouring threads read neighbouring words of
// the B tile (no bank conflicts) and write neighbouring outputs
// (coalesced). Each K step fetches the next BK-deep slices into registers
// first, with 4-wide vector loads along each operand's contiguous dimension
// (element loads at misaligned or partial edges, zero outside), so the
// loads are in flight while the current slices are multiplied; A is stored
// k-major in threadgroup memory so a thread's TM rows are adjacent. With
// STAGES=2 the slices alternate between two threadgroup buffers and each
// step needs one barrier instead of two.
const gemmSource = `
#define A_CH ((BM * BK / 4 + NTHREADS - 1) / NTHREADS)
#define B_CH ((BK * BN / 4 + NTHREADS - 1) / NTHREADS)
#define LDAS (BM + PAD)
#define LDBS (BN + PAD)
  const int tr = LID / (BN / TN), tc = LID % (BN / TN);
  const int row0 = GROUP_Y * BM, col0 = GROUP_X * BN;
  SHARED(float, As, STAGES * BK * LDAS);
  SHARED(float, Bs, STAGES * BK * LDBS);
  float acc[TM][TN];
  UNROLL_LOOP
  for (int i = 0; i < TM; ++i) {
    UNROLL_LOOP
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
  }
  float ra[A_CH][4], rb[B_CH][4];
  const int KT = (K + BK - 1) / BK;
  for (int it = -1; it < KT; ++it) {
    const int lt = it + 1;
    if (lt < KT) {
      const int k0 = lt * BK;
      UNROLL_LOOP
      for (int u = 0; u < A_CH; ++u) {
        const int c = LID + u * NTHREADS;
#if A_TRANS
        const int p = c / (BM / 4), i = (c % (BM / 4)) * 4;
        const int src = (k0 + p) * M + row0 + i;
        const int n = (c < BM * BK / 4 && k0 + p < K) ? KT_CLAMP(M - row0 - i, 0, 4) : 0;
#else
        const int i = c / (BK / 4), p = (c % (BK / 4)) * 4;
        const int src = (row0 + i) * K + k0 + p;
        const int n = (c < BM * BK / 4 && row0 + i < M) ? KT_CLAMP(K - k0 - p, 0, 4) : 0;
#endif
        if (n == 4 && (src & 3) == 0) {
          LOADV(A, src, ra[u]);
        } else {
          UNROLL_LOOP
          for (int q = 0; q < 4; ++q) ra[u][q] = q < n ? LOAD(A, src + q) : 0.0f;
        }
      }
      UNROLL_LOOP
      for (int u = 0; u < B_CH; ++u) {
        const int c = LID + u * NTHREADS;
        const int p = c / (BN / 4), j = (c % (BN / 4)) * 4;
        const int src = (k0 + p) * N + col0 + j;
        const int n = (c < BK * BN / 4 && k0 + p < K) ? KT_CLAMP(N - col0 - j, 0, 4) : 0;
        if (n == 4 && (src & 3) == 0) {
          LOADV(B, src, rb[u]);
        } else {
          UNROLL_LOOP
          for (int q = 0; q < 4; ++q) rb[u][q] = q < n ? LOAD(B, src + q) : 0.0f;
        }
      }
    }
    if (it >= 0) {
      const int abase = (STAGES == 2 ? (it & 1) : 0) * BK * LDAS;
      const int bbase = (STAGES == 2 ? (it & 1) : 0) * BK * LDBS;
      UNROLL_LOOP
      for (int p = 0; p < BK; ++p) {
        float a[TM], b[TN];
        UNROLL_LOOP
        for (int i = 0; i < TM; ++i) a[i] = As[abase + p * LDAS + tr * TM + i];
        UNROLL_LOOP
        for (int j = 0; j < TN; ++j) b[j] = Bs[bbase + p * LDBS + tc + j * (BN / TN)];
        UNROLL_LOOP
        for (int i = 0; i < TM; ++i) {
          UNROLL_LOOP
          for (int j = 0; j < TN; ++j) acc[i][j] = FMA(a[i], b[j], acc[i][j]);
        }
      }
    }
#if STAGES == 1
    BARRIER();
#endif
    if (lt < KT) {
      const int abase = (STAGES == 2 ? (lt & 1) : 0) * BK * LDAS;
      const int bbase = (STAGES == 2 ? (lt & 1) : 0) * BK * LDBS;
      UNROLL_LOOP
      for (int u = 0; u < A_CH; ++u) {
        const int c = LID + u * NTHREADS;
        if (c < BM * BK / 4) {
#if A_TRANS
          const int p = c / (BM / 4), i = (c % (BM / 4)) * 4;
          UNROLL_LOOP
          for (int q = 0; q < 4; ++q) As[abase + p * LDAS + i + q] = ra[u][q];
#else
          const int i = c / (BK / 4), p = (c % (BK / 4)) * 4;
          UNROLL_LOOP
          for (int q = 0; q < 4; ++q) As[abase + (p + q) * LDAS + i] = ra[u][q];
#endif
        }
      }
      UNROLL_LOOP
      for (int u = 0; u < B_CH; ++u) {
        const int c = LID + u * NTHREADS;
        if (c < BK * BN / 4) {
          const int p = c / (BN / 4), j = (c % (BN / 4)) * 4;
          UNROLL_LOOP
          for (int q = 0; q < 4; ++q) Bs[bbase + p * LDBS + j + q] = rb[u][q];
        }
      }
    }
    BARRIER();
  }
  UNROLL_LOOP
  for (int i = 0; i < TM; ++i) {
    const int gi = row0 + tr * TM + i;
    UNROLL_LOOP
    for (int j = 0; j < TN; ++j) {
      const int gj = col0 + tc + j * (BN / TN);
      if (gi < M && gj < N) STORE(C, gi * N + gj, acc[i][j]);
    }
  }`

// gemmMMASource is the MMA=1 body, written against fragments (see the
// package doc): WM×WN SIMD-groups (warps) of 32 threads each own a
// (BM/WM)×(BN/WN) block of the BM×BN tile as FM×FN accumulator fragments,
// as MLX's steel GEMM lays them out. BK-deep slices of A' and B pass
// through a ring of STAGES threadgroup buffers, padded a row by SPAD_A and
// SPAD_B elements against bank conflicts: the copy of slice it+STAGES−1 is
// issued before slice it is multiplied, so on CUDA (cp.async) up to
// STAGES−1 slices are in flight; one barrier per slice. Threadgroups run
// in bands of 8 tile rows so that neighbours in launch order share
// operands in the cache. With KS > 1 the
// threadgroup has KS sets of WM×WN SIMD-groups that share the copies and
// split each slice's depth: set z multiplies the z-th BK/KS of it, so
// more SIMD-groups work on one tile (for grids too small to fill the GPU,
// and for shorter dependency chains a SIMD-group), and the KS partial
// tiles are summed through threadgroup memory (the ring's, reused) at the
// end, where the whole group also writes C row by row.
const gemmMMASource = `
#define A_ROWS (A_TRANS ? BK : BM)
#define A_COLS (A_TRANS ? BM : BK)
#define LDA (A_COLS + SPAD_A)
#define LDB (BN + SPAD_B)
#define A_TILE (A_ROWS * LDA)
#define B_TILE (BK * LDB)
#define FM (BM / WM / FRAG_M)
#define FN (BN / WN / FRAG_N)
#define A_CHUNKS (A_ROWS * A_COLS / COPY_N)
#define B_CHUNKS (BK * BN / COPY_N)
#define LDR (BN + 8)
#define RED_ELEMS (KS > 1 ? KS * BM * LDR * 4 / (int)sizeof(SMEM_T) : 0)
#define RING_ELEMS (STAGES * (A_TILE + B_TILE))
  SHARED_DYN(SMEM_T, tiles, RING_ELEMS > RED_ELEMS ? RING_ELEMS : RED_ELEMS);
  SHARED(float, Cs, KS > 1 ? 1 : (NTHREADS / 32) * FRAG_SCRATCH);
  const int warp = LID / 32;
  const int kz = KS > 1 ? warp / (WM * WN) : 0, wmn = KS > 1 ? warp % (WM * WN) : warp;
  const int wr = (wmn / WN) * (BM / WM), wc = (wmn % WN) * (BN / WN);
  const int tiles_n = (N + BN - 1) / BN, tiles_m = (M + BM - 1) / BM;
  const int bid = GROUP_Y * tiles_n + GROUP_X, band = bid / (8 * tiles_n);
  const int in_band = KT_CLAMP(tiles_m - band * 8, 1, 8), pos = bid % (8 * tiles_n);
  const int row0 = (band * 8 + pos % in_band) * BM, col0 = (pos / in_band) * BN;
  FRAG_C acc[FM][FN];
  UNROLL_LOOP
  for (int i = 0; i < FM; ++i) {
    UNROLL_LOOP
    for (int j = 0; j < FN; ++j) FRAG_ZERO(acc[i][j]);
  }
  const int KT = (K + BK - 1) / BK;
  for (int it = 1 - STAGES; it < KT; ++it) {
    const int lt = it + STAGES - 1;
#if STAGES > 1
    if (it >= 0) {
      COPY_WAIT(STAGES - 2);
      BARRIER();
    }
#else
    BARRIER();
#endif
    if (lt < KT) {
      const int k0 = lt * BK;
      SHARED_PTR(SMEM_T) As_ = tiles + (lt % STAGES) * (A_TILE + B_TILE);
      SHARED_PTR(SMEM_T) Bs_ = As_ + A_TILE;
      // A slice inside the matrix whose rows start at multiples of
      // COPY_N is copied without a check per chunk; an edge slice checks
      // each chunk's bounds and alignment.
#if A_TRANS
      const bool a_full = k0 + BK <= K && row0 + BM <= M && M % COPY_N == 0;
#define A_SRC(r, q) ((k0 + (r)) * M + row0 + (q))
#define A_VALID(r, q) (k0 + (r) < K ? KT_CLAMP(M - row0 - (q), 0, COPY_N) : 0)
#else
      const bool a_full = row0 + BM <= M && k0 + BK <= K && K % COPY_N == 0;
#define A_SRC(r, q) ((row0 + (r)) * K + k0 + (q))
#define A_VALID(r, q) (row0 + (r) < M ? KT_CLAMP(K - k0 - (q), 0, COPY_N) : 0)
#endif
#define A_RQ(u) const int c = LID + (u) * NTHREADS; \
        const int r = c / (A_COLS / COPY_N), q = (c % (A_COLS / COPY_N)) * COPY_N
#define B_RQ(u) const int c = LID + (u) * NTHREADS; \
        const int r = c / (BN / COPY_N), q = (c % (BN / COPY_N)) * COPY_N
      if (a_full) {
        UNROLL_LOOP
        for (int u = 0; u < (A_CHUNKS + NTHREADS - 1) / NTHREADS; ++u) {
          A_RQ(u);
          if (A_CHUNKS % NTHREADS == 0 || c < A_CHUNKS) COPY_FULL(As_ + r * LDA + q, A, A_SRC(r, q));
        }
      } else {
        UNROLL_LOOP
        for (int u = 0; u < (A_CHUNKS + NTHREADS - 1) / NTHREADS; ++u) {
          A_RQ(u);
          if (A_CHUNKS % NTHREADS == 0 || c < A_CHUNKS) COPY_CHUNK(As_ + r * LDA + q, A, A_SRC(r, q), A_VALID(r, q));
        }
      }
      if (k0 + BK <= K && col0 + BN <= N && N % COPY_N == 0) {
        UNROLL_LOOP
        for (int u = 0; u < (B_CHUNKS + NTHREADS - 1) / NTHREADS; ++u) {
          B_RQ(u);
          if (B_CHUNKS % NTHREADS == 0 || c < B_CHUNKS) COPY_FULL(Bs_ + r * LDB + q, B, (k0 + r) * N + col0 + q);
        }
      } else {
        UNROLL_LOOP
        for (int u = 0; u < (B_CHUNKS + NTHREADS - 1) / NTHREADS; ++u) {
          B_RQ(u);
          if (B_CHUNKS % NTHREADS == 0 || c < B_CHUNKS) {
            COPY_CHUNK(Bs_ + r * LDB + q, B, (k0 + r) * N + col0 + q, k0 + r < K ? KT_CLAMP(N - col0 - q, 0, COPY_N) : 0);
          }
        }
      }
    }
    COPY_COMMIT();
#if STAGES == 1
    COPY_WAIT(0);
    BARRIER();
#endif
    if (it >= 0) {
      SHARED_PTR(SMEM_T) As_ = tiles + (it % STAGES) * (A_TILE + B_TILE);
      SHARED_PTR(SMEM_T) Bs_ = As_ + A_TILE;
      UNROLL_LOOP
      for (int k2 = 0; k2 < BK / KS; k2 += FRAG_K) {
        const int kk = kz * (BK / KS) + k2;
        FRAG_A a[FM];
        FRAG_B b[FN];
        UNROLL_LOOP
        for (int i = 0; i < FM; ++i) {
#if A_TRANS
          FRAG_LOAD_AT(a[i], As_ + kk * LDA + wr + i * FRAG_M, LDA);
#else
          FRAG_LOAD_A(a[i], As_ + (wr + i * FRAG_M) * LDA + kk, LDA);
#endif
        }
        UNROLL_LOOP
        for (int j = 0; j < FN; ++j) FRAG_LOAD_B(b[j], Bs_ + kk * LDB + wc + j * FRAG_N, LDB);
        UNROLL_LOOP
        for (int i = 0; i < FM; ++i) {
          UNROLL_LOOP
          for (int j = 0; j < FN; ++j) FRAG_MMA(acc[i][j], a[i], b[j]);
        }
      }
    }
  }
#if KS > 1
  // The ring is free once every copy has landed and every set has read
  // its last slice: the sets' partial tiles go into it, then each thread
  // sums and stores elements of the tile, neighbouring threads neighbouring
  // columns.
  COPY_WAIT(0);
  BARRIER();
  SHARED_PTR(float) red = (SHARED_PTR(float))tiles;
  UNROLL_LOOP
  for (int i = 0; i < FM; ++i) {
    UNROLL_LOOP
    for (int j = 0; j < FN; ++j) FRAG_STORE_TG(acc[i][j], red + (kz * BM + wr + i * FRAG_M) * LDR + wc + j * FRAG_N, LDR);
  }
  BARRIER();
  for (int e = LID; e < BM * BN; e += NTHREADS) {
    const int r = e / BN, c = e % BN;
    float s = red[r * LDR + c];
    UNROLL_LOOP
    for (int z = 1; z < KS; ++z) s += red[(z * BM + r) * LDR + c];
    if (row0 + r < M && col0 + c < N) STORE(C, (row0 + r) * N + col0 + c, s);
  }
#else
  UNROLL_LOOP
  for (int i = 0; i < FM; ++i) {
    UNROLL_LOOP
    for (int j = 0; j < FN; ++j) {
      FRAG_STORE(acc[i][j], C, N, row0 + wr + i * FRAG_M, col0 + wc + j * FRAG_N, M, N, Cs + warp * FRAG_SCRATCH);
    }
  }
#endif`

// gemmThreads is the threadgroup size of a GEMM candidate.
func gemmThreads(p map[string]int) int {
	if p["MMA"] == 1 {
		return 32 * p["WM"] * p["WN"] * gemmKS(p)
	}
	return (p["BM"] / p["TM"]) * (p["BN"] / p["TN"])
}

// gemmStages reads STAGES, which candidates written before it existed lack.
func gemmStages(p map[string]int) int { return max(p["STAGES"], 1) }

// gemmKS reads KS, which candidates written before it lack: one set of
// SIMD-groups.
func gemmKS(p map[string]int) int { return max(p["KS"], 1) }

// gemmSIMTShared is the SIMT body's threadgroup memory (float tiles on every API).
func gemmSIMTShared(p map[string]int) int {
	return 4 * gemmStages(p) * p["BK"] * (p["BM"] + p["BN"] + 2*p["PAD"])
}

// gemmMMATiles is the MMA body's ring of tiles in bytes, for a fragment
// layout: the larger of the tiles and, with KS > 1, the KS float partial
// tiles (rows padded by 8) that reuse it.
func gemmMMATiles(f Fragment, p map[string]int, trans int) int {
	a := p["BM"] * (p["BK"] + f.PadA)
	if trans == 1 {
		a = p["BK"] * (p["BM"] + f.PadAT)
	}
	ring := gemmStages(p) * (a + p["BK"]*(p["BN"]+f.PadB)) * f.SmemBytes
	if ks := gemmKS(p); ks > 1 {
		return max(ring, ks*p["BM"]*(p["BN"]+8)*4)
	}
	return ring
}

// gemmMMAScratch is the bytes of FRAG_STORE's scratch: none used with KS > 1
// (one float declared), where C leaves through the partial tiles.
func gemmMMAScratch(f Fragment, p map[string]int) int {
	if gemmKS(p) > 1 {
		return 4
	}
	return 4 * gemmThreads(p) / 32 * max(f.Scratch, 1)
}

func gemmBody(family, fn string, trans int) *Body {
	return &Body{
		Family: family, Func: fn,
		Args:   []Arg{{"A", In}, {"B", In}, {"C", Out}, {"M", Int}, {"N", Int}, {"K", Int}},
		Source: "#define KT_CLAMP(x, lo, hi) ((x) < (lo) ? (lo) : (x) > (hi) ? (hi) : (x))\n#if MMA\n" + gemmMMASource + "\n#else\n" + gemmSource + "\n#endif",
		Defines: func(p map[string]int) map[string]int {
			return map[string]int{"NTHREADS": gemmThreads(p), "A_TRANS": trans, "MMA": p["MMA"], "VEC": 4, "STAGES": gemmStages(p),
				"KS": gemmKS(p)}
		},
		APIDefines: func(api API, dt kernels.DType, p map[string]int) (map[string]int, error) {
			if p["MMA"] != 1 {
				return nil, nil
			}
			f, err := GemmFragment(api, dt, p)
			if err != nil {
				return nil, err
			}
			padA := f.PadA
			if trans == 1 {
				padA = f.PadAT
			}
			return map[string]int{"FRAG_M": f.M, "FRAG_N": f.N, "FRAG_K": f.K, "SPAD_A": padA, "SPAD_B": f.PadB, "FRAG_SCRATCH": max(f.Scratch, 1)}, nil
		},
		// The largest over the APIs: Metal's float tiles and scratch.
		SharedBytes: func(p map[string]int) int {
			if p["MMA"] == 1 {
				f := metalFragment
				return gemmMMATiles(f, p, trans) + gemmMMAScratch(f, p)
			}
			return gemmSIMTShared(p)
		},
		SharedBytesAPI: func(api API, dt kernels.DType, p map[string]int) int {
			if p["MMA"] != 1 {
				return gemmSIMTShared(p)
			}
			f, err := GemmFragment(api, dt, p)
			if err != nil {
				f = metalFragment
			}
			return gemmMMATiles(f, p, trans) + gemmMMAScratch(f, p)
		},
		DynamicShared: func(api API, dt kernels.DType, p map[string]int) int {
			if p["MMA"] != 1 || api != CUDA {
				return 0
			}
			f, err := GemmFragment(api, dt, p)
			if err != nil {
				return 0
			}
			return gemmMMATiles(f, p, trans)
		},
		Needs: func(p map[string]int) []Feature {
			if p["MMA"] != 1 {
				return nil
			}
			fs := []Feature{SIMDMatrix}
			if p["TF32"] == 1 {
				fs = append(fs, TF32)
			}
			if p["STAGES"] > 2 {
				fs = append(fs, AsyncCopy)
			}
			return fs
		},
		Geometry: func(shape []int, p map[string]int) Launch {
			m, n := gemmMN(shape, trans)
			return Launch{Grid: [2]int{ceilDiv(n, p["BN"]), ceilDiv(m, p["BM"])}, Threads: gemmThreads(p)}
		},
		Scalars: func(c kernels.Case, _ map[string]float64) []any {
			m, n := gemmMN(c.Shape, trans)
			k := c.Shape[2]
			if trans == 1 {
				k = c.Shape[0]
			}
			return []any{int32(m), int32(n), int32(k)}
		},
	}
}

// gemmMN maps a family shape to the output's rows and columns: gemm_av's C
// is m×n; gemm_at_b's Z is n×k (reduction over m).
func gemmMN(shape []int, trans int) (int, int) {
	if trans == 1 {
		return shape[1], shape[2]
	}
	return shape[0], shape[1]
}

func init() {
	AddBuiltin(gemmBody("gemm_av", "kt_gemm_av", 0))
	AddBuiltin(gemmBody("gemm_at_b", "kt_gemm_at_b", 1))
}

// GemmTemplate is the CUDA source of gemm_av in dt without its header line
// and parameter #defines: the prelude, the signature and the body, which no
// parameter changes. scripts/gemm_xcheck.py compiles candidates from it on a
// GPU machine without the kerntune binary.
func GemmTemplate(dt kernels.DType) (string, error) {
	b := bodies["gemm_av"]
	p := map[string]int{"BM": 64, "BN": 64, "BK": 32, "TM": 1, "TN": 1, "PAD": 0, "MMA": 1, "WM": 2, "WN": 2, "STAGES": 2, "TF32": 0}
	if dt == kernels.F32 {
		p["TF32"] = 1
	}
	src, err := b.SourceFor(CUDA, dt, p)
	if err != nil {
		return "", err
	}
	// The header line, then one #define per parameter and derived constant.
	lines := strings.SplitAfter(src, "\n")
	skip := 1
	for skip < len(lines) && isIntDefine(lines[skip]) {
		skip++
	}
	return strings.Join(lines[skip:], ""), nil
}

// isIntDefine reports a line "#define NAME INTEGER".
func isIntDefine(line string) bool {
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != "#define" {
		return false
	}
	_, err := strconv.Atoi(f[2])
	return err == nil
}
