package gpu

import (
	"fmt"
	"sort"
	"sync"

	"github.com/kerntune/kerntune/kernels"
)

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// gemmStage stages one BK-deep slice of A' and B into threadgroup memory,
// zero-padded at the edges; the variants lay A out differently (AS_INDEX).
const gemmStage = `    for (int e = LID; e < BM * BK; e += NTHREADS) {
#if A_TRANS
      const int p = e / BM, i = e % BM;
      const int gi = row0 + i, gp = p0 + p;
      As[AS_INDEX(i, p)] = (gi < M && gp < K) ? LOAD(A, gp * M + gi) : 0.0f;
#else
      const int i = e / BK, p = e % BK;
      const int gi = row0 + i, gp = p0 + p;
      As[AS_INDEX(i, p)] = (gi < M && gp < K) ? LOAD(A, gi * K + gp) : 0.0f;
#endif
    }
    for (int e = LID; e < BK * BN; e += NTHREADS) {
      const int p = e / BN, j = e % BN;
      const int gp = p0 + p, gj = col0 + j;
      Bs[p * (BN + PAD) + j] = (gp < K && gj < N) ? LOAD(B, gp * N + gj) : 0.0f;
    }
`

// gemmSource is shared by gemm_av and gemm_at_b: C[M×N] = A'·B[K×N] where
// A' is A[M×K] (A_TRANS 0) or the transpose of A[K×M] (A_TRANS 1). Each
// threadgroup computes a BM×BN tile, staging BK-deep slices of both operands
// in threadgroup memory (zero-padded at the edges); each thread accumulates
// TM×TN outputs in registers: TM adjacent rows, and TN columns strided by
// BN/TN so that neighbouring threads read neighbouring words of the B tile
// (no bank conflicts) and write neighbouring outputs (coalesced).
const gemmSource = `
#define AS_INDEX(i, p) ((p) * (BM + PAD) + (i))
  const int tr = LID / (BN / TN), tc = LID % (BN / TN);
  const int row0 = GROUP_Y * BM, col0 = GROUP_X * BN;
  SHARED(float, As, BK * (BM + PAD));
  SHARED(float, Bs, BK * (BN + PAD));
  float acc[TM][TN];
  UNROLL_LOOP
  for (int i = 0; i < TM; ++i) {
    UNROLL_LOOP
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
  }
  for (int p0 = 0; p0 < K; p0 += BK) {
` + gemmStage + `    BARRIER();
    UNROLL_LOOP
    for (int p = 0; p < BK; ++p) {
      float a[TM], b[TN];
      UNROLL_LOOP
      for (int i = 0; i < TM; ++i) a[i] = As[p * (BM + PAD) + tr * TM + i];
      UNROLL_LOOP
      for (int j = 0; j < TN; ++j) b[j] = Bs[p * (BN + PAD) + tc + j * (BN / TN)];
      UNROLL_LOOP
      for (int i = 0; i < TM; ++i) {
        UNROLL_LOOP
        for (int j = 0; j < TN; ++j) acc[i][j] = FMA(a[i], b[j], acc[i][j]);
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

// softmaxSource: one segment of TPR threads per row, RPB rows per
// threadgroup; an online max/sum pass (VEC-wide aligned loads, UNROLL of them
// in flight), a reduction of (max, sum) across the segment, then a pass that
// writes exp(x − max) / sum with VEC-wide stores.
const softmaxSource = `
  const int seg = LID / TPR, sl = LID % TPR;
  const int row = GROUP_X * RPB + seg;
  const bool live = row < rows;
  const int base = live ? row * cols : 0;
  const int step = TPR * VEC;
  SHARED(float, red, NTHREADS);
  float m = NEG_BIG, s = 0.0f;
  if (live) {
    int c = sl * VEC;
    for (; c + (UNROLL - 1) * step < cols; c += UNROLL * step) {
      float v[UNROLL][VEC];
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
      float v[VEC];
      LOADV(x, base + c, v);
      UNROLL_LOOP
      for (int j = 0; j < VEC; ++j) {
        const float nm = FMAX(m, v[j]);
        s = s * EXP(m - nm) + EXP(v[j] - nm);
        m = nm;
      }
    }
  }
  const float mx = SEG_MAX(m, TPR, red);
  s *= EXP(m - mx);
  const float sum = SEG_SUM(s, TPR, red);
  if (live) {
    const float inv = 1.0f / sum;
    for (int c = sl * VEC; c < cols; c += step) {
      float v[VEC];
      LOADV(x, base + c, v);
      UNROLL_LOOP
      for (int j = 0; j < VEC; ++j) v[j] = EXP(v[j] - mx) * inv;
      STOREV(y, base + c, v);
    }
  }`

// rmsnormSource: one segment of TPR threads per row; sum of squares with
// VEC-wide loads and UNROLL accumulators, a segment reduction, then the
// scaled write with VEC-wide stores.
const rmsnormSource = `
  const int seg = LID / TPR, sl = LID % TPR;
  const int row = GROUP_X * RPB + seg;
  const bool live = row < rows;
  const int base = live ? row * cols : 0;
  const int step = TPR * VEC;
  SHARED(float, red, NTHREADS);
  float acc[UNROLL];
  UNROLL_LOOP
  for (int u = 0; u < UNROLL; ++u) acc[u] = 0.0f;
  if (live) {
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
    for (int c = sl * VEC; c < cols; c += step) {
      float v[VEC], g[VEC];
      LOADV(x, base + c, v);
      LOADV(w, c, g);
      UNROLL_LOOP
      for (int j = 0; j < VEC; ++j) v[j] = v[j] * inv * g[j];
      STOREV(y, base + c, v);
    }
  }`

// gemmMMASource is the MMA=1 variant: each SIMD-group of 32 threads owns a
// (8·TM)×(8·TN) block of the tile as TM×TN 8×8 matrix fragments (Metal's
// simdgroup_float8x8; the CUDA prelude emulates the same semantics with warp
// shuffles so that the body's indexing is verified off a Mac). A is staged
// row-major so that fragments load with a plain stride; results leave
// through a per-SIMD-group 8×8 scratch so edges are bounds-checked.
const gemmMMASource = `
#define AS_INDEX(i, p) ((i) * (BK + PAD) + (p))
  const int sg = LID / 32, lane = LID % 32;
  const int sr = (sg / (BN / (8 * TN))) * (8 * TM), sc = (sg % (BN / (8 * TN))) * (8 * TN);
  const int row0 = GROUP_Y * BM, col0 = GROUP_X * BN;
  SHARED(float, As, BM * (BK + PAD));
  SHARED(float, Bs, BK * (BN + PAD));
  SHARED(float, Cs, (NTHREADS / 32) * 64);
  MMA_T acc[TM][TN];
  UNROLL_LOOP
  for (int i = 0; i < TM; ++i) {
    UNROLL_LOOP
    for (int j = 0; j < TN; ++j) MMA_ZERO(acc[i][j]);
  }
  for (int p0 = 0; p0 < K; p0 += BK) {
` + gemmStage + `    BARRIER();
    for (int kk = 0; kk < BK; kk += 8) {
      MMA_T a[TM], b[TN];
      UNROLL_LOOP
      for (int i = 0; i < TM; ++i) MMA_LOAD(a[i], As + (sr + 8 * i) * (BK + PAD) + kk, BK + PAD);
      UNROLL_LOOP
      for (int j = 0; j < TN; ++j) MMA_LOAD(b[j], Bs + kk * (BN + PAD) + sc + 8 * j, BN + PAD);
      UNROLL_LOOP
      for (int i = 0; i < TM; ++i) {
        UNROLL_LOOP
        for (int j = 0; j < TN; ++j) MMA_MAC(acc[i][j], a[i], b[j]);
      }
    }
    BARRIER();
  }
  const int r = lane / 4, c = (lane % 4) * 2;
  for (int i = 0; i < TM; ++i) {
    for (int j = 0; j < TN; ++j) {
      MMA_STORE(acc[i][j], Cs + sg * 64, 8);
      SIMD_BARRIER();
      const int gi = row0 + sr + 8 * i + r, gj = col0 + sc + 8 * j + c;
      if (gi < M && gj < N) STORE(C, gi * N + gj, Cs[sg * 64 + r * 8 + c]);
      if (gi < M && gj + 1 < N) STORE(C, gi * N + gj + 1, Cs[sg * 64 + r * 8 + c + 1]);
      SIMD_BARRIER();
    }
  }`

// gemmThreads is the threadgroup size of a GEMM candidate.
func gemmThreads(p map[string]int) int {
	if p["MMA"] == 1 {
		return 32 * (p["BM"] / (8 * p["TM"])) * (p["BN"] / (8 * p["TN"]))
	}
	return (p["BM"] / p["TM"]) * (p["BN"] / p["TN"])
}

func gemmBody(family, fn string, trans int) *Body {
	return &Body{
		Family: family, Func: fn,
		Args:   []Arg{{"A", In}, {"B", In}, {"C", Out}, {"M", Int}, {"N", Int}, {"K", Int}},
		Source: "#if MMA\n" + gemmMMASource + "\n#else\n" + gemmSource + "\n#endif",
		Defines: func(p map[string]int) map[string]int {
			return map[string]int{"NTHREADS": gemmThreads(p), "A_TRANS": trans, "MMA": p["MMA"]}
		},
		SharedBytes: func(p map[string]int) int {
			if p["MMA"] == 1 {
				return 4 * (p["BM"]*(p["BK"]+p["PAD"]) + p["BK"]*(p["BN"]+p["PAD"]) + gemmThreads(p)/32*64)
			}
			return 4 * p["BK"] * (p["BM"] + p["BN"] + 2*p["PAD"])
		},
		Needs: func(p map[string]int) []Feature {
			if p["MMA"] == 1 {
				return []Feature{SIMDMatrix}
			}
			return nil
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

func rowBody(family, fn, src string, args []Arg, scalars func(c kernels.Case, consts map[string]float64) []any) *Body {
	return &Body{
		Family: family, Func: fn, Args: args, Source: src,
		Defines:     func(p map[string]int) map[string]int { return map[string]int{"NTHREADS": p["TPR"] * p["RPB"]} },
		SharedBytes: func(p map[string]int) int { return 4 * p["TPR"] * p["RPB"] },
		Geometry: func(shape []int, p map[string]int) Launch {
			return Launch{Grid: [2]int{ceilDiv(shape[0], p["RPB"]), 1}, Threads: p["TPR"] * p["RPB"]}
		},
		Scalars: scalars,
	}
}

var bodies = map[string]*Body{
	"gemm_av":   gemmBody("gemm_av", "kt_gemm_av", 0),
	"gemm_at_b": gemmBody("gemm_at_b", "kt_gemm_at_b", 1),
	"gemv_nt": {
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
	},
	"softmax": rowBody("softmax", "kt_softmax", softmaxSource,
		[]Arg{{"x", In}, {"y", Out}, {"rows", Int}, {"cols", Int}},
		func(c kernels.Case, _ map[string]float64) []any { return []any{int32(c.Shape[0]), int32(c.Shape[1])} }),
	"rmsnorm": rowBody("rmsnorm", "kt_rmsnorm", rmsnormSource,
		[]Arg{{"x", In}, {"w", In}, {"y", Out}, {"rows", Int}, {"cols", Int}, {"eps", Float}},
		func(c kernels.Case, consts map[string]float64) []any {
			return []any{int32(c.Shape[0]), int32(c.Shape[1]), float32(consts["eps"])}
		}),
}

// registered holds the bodies of user-defined kernels (kernel spec files),
// added by Register so that every GPU backend finds them by name.
var (
	registeredMu sync.RWMutex
	registered   = map[string]*Body{}
)

// Register adds the body of a user-defined kernel, named by b.Family; a
// built-in family's name is refused, the same name again replaces it.
func Register(b *Body) error {
	if b == nil || b.Family == "" {
		return fmt.Errorf("gpu.Register: body without a family name")
	}
	if _, ok := bodies[b.Family]; ok {
		return fmt.Errorf("kernel name %q is a built-in family; choose another name", b.Family)
	}
	registeredMu.Lock()
	defer registeredMu.Unlock()
	registered[b.Family] = b
	return nil
}

// Get returns the body of a family: built in or registered.
func Get(family string) (*Body, error) {
	b, ok := bodies[family]
	if !ok {
		registeredMu.RLock()
		b, ok = registered[family]
		registeredMu.RUnlock()
	}
	if !ok {
		return nil, fmt.Errorf("no GPU kernel body for %q", family)
	}
	return b, nil
}

// Families lists the built-in families that have a body.
func Families() []string {
	var names []string
	for n := range bodies {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
