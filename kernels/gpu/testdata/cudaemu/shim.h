// A host stand-in for the CUDA device API that the generated GEMM, lora
// and qgemv sources use, so that g++ compiles and runs them on the CPU:
// one fiber (ucontext) per CUDA thread on one OS thread, switching only
// where a thread waits, __syncthreads as a barrier of the block, and the
// warp-wide PTX instructions of the fragment operations (ldmatrix,
// mma.sync, cp.async) emulated from their definitions in the PTX ISA, with
// the 32 lanes of a warp meeting at a barrier to exchange operands. The
// test replaces the source's PTX block (cudaPTX), its half conversions and
// its f16x2 arithmetic by the functions below. KT_CP_LAZY: cp.async copies
// happen at the wait that covers them (a missing wait reads stale data);
// otherwise at issue (a copy into a buffer still being read corrupts it).
//
// Fibers rather than OS threads: a block of 256 threads meeting at spinning
// barriers took minutes on a 2-core machine with other work beside it
// (seconds alone); fibers take the same time whatever else runs.
#include <ucontext.h>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

struct kt_dim3 { unsigned x, y, z; };
// The running fiber's: the scheduler sets it before it resumes one.
static kt_dim3 threadIdx;
static kt_dim3 blockIdx;

// The fibers of the block being run (kt_run_block).
constexpr int kt_max_threads = 1024;
constexpr size_t kt_stack = 256 << 10;
struct kt_fiber {
  ucontext_t ctx;
  bool done;
  char* stack;
};
static kt_fiber kt_fibers[kt_max_threads];
static ucontext_t kt_sched;
static unsigned long long kt_events;  // arrivals and exits: progress
static inline void kt_yield() { swapcontext(&kt_fibers[threadIdx.x].ctx, &kt_sched); }

// A barrier among n fibers: the last to arrive opens it; the others yield
// until it opens.
struct kt_barrier {
  unsigned n, count = 0, gen = 0;
  explicit kt_barrier(unsigned n) : n(n) {}
  void arrive_and_wait() {
    const unsigned g = gen;
    ++kt_events;
    if (++count == n) {
      count = 0;
      ++gen;
      return;
    }
    while (gen == g) kt_yield();
  }
};
static kt_barrier* kt_block_barrier;
static int kt_nthreads;

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ static
#define __syncthreads() kt_block_barrier->arrive_and_wait()

struct float2 { float x, y; };
struct float4 { float x, y, z, w; };
struct uint2 { unsigned x, y; };
struct uint4 { unsigned x, y, z, w; };
inline float2 make_float2(float a, float b) { return {a, b}; }
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
inline uint2 make_uint2(unsigned a, unsigned b) { return {a, b}; }
inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return {a, b, c, d}; }
inline float __expf(float x) { return std::exp(x); }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
inline unsigned kt_float_bits(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
inline unsigned __float_as_uint(float f) { return kt_float_bits(f); }
// prmt.b32 (default mode): byte i of the result is byte s's nibble i of the
// eight bytes {y, x} (x the low four).
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const unsigned long long b = (unsigned long long)y << 32 | x;
  unsigned r = 0;
  for (int i = 0; i < 4; ++i) r |= (unsigned)(b >> (8 * ((s >> (4 * i)) & 7)) & 0xffu) << (8 * i);
  return r;
}
static float kt_shfl_xor(float v, int o);
// Every lane of the warp must call it, as the full mask says.
inline float __shfl_xor_sync(unsigned, float v, int o) { return kt_shfl_xor(v, o); }
using std::max;
using std::min;

#ifdef KT_EMU_BF16
// bf16 (a source with KT_BF16): the upper half of a float32; cvt.rn.bf16.f32
// rounds to nearest even.
inline float kt_h2f(unsigned short h) { return __uint_as_float((unsigned)h << 16); }
inline unsigned short kt_f2h(float f) {
  unsigned u = kt_float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
#else
inline float kt_h2f(unsigned short h) { _Float16 v; std::memcpy(&v, &h, 2); return (float)v; }
inline unsigned short kt_f2h(float f) { _Float16 v = (_Float16)f; unsigned short h; std::memcpy(&h, &v, 2); return h; }
#endif
// f16 whatever the activations' type (qgemv's f16 pairs take bf16's x too).
inline float kt_half2f(unsigned short h) { _Float16 v; std::memcpy(&v, &h, 2); return (float)v; }
inline unsigned short kt_f2half(float f) { _Float16 v = (_Float16)f; unsigned short h; std::memcpy(&h, &v, 2); return h; }
// sub.rn.f16x2, mul.rn.f16x2 and fma.rn.f16x2 (qgemv's f16 pairs), each
// half of the 32-bit registers on its own: the result computed in long
// double and rounded to f16, nearest even, as the instructions round. A
// product of two halves (22 significant bits) is exact there, and so is
// its sum with a third half unless their exponents are more than 43
// apart, where the long double's rounding could turn a near-tie of the
// f16 rounding into a tie. Subnormal halves are kept, as the f16
// instructions keep them.
inline long double kt_half_at(unsigned r, int i) {
  const unsigned short h = (unsigned short)(r >> (16 * i));
  _Float16 v;
  std::memcpy(&v, &h, 2);
  return (long double)v;
}
inline unsigned kt_half_bits(long double v) {
  const _Float16 h = (_Float16)v;
  unsigned short b;
  std::memcpy(&b, &h, 2);
  return b;
}
inline unsigned kt_hsub2(unsigned a, unsigned b) {
  return kt_half_bits(kt_half_at(a, 0) - kt_half_at(b, 0)) | kt_half_bits(kt_half_at(a, 1) - kt_half_at(b, 1)) << 16;
}
inline unsigned kt_hmul2(unsigned a, unsigned b) {
  return kt_half_bits(kt_half_at(a, 0) * kt_half_at(b, 0)) | kt_half_bits(kt_half_at(a, 1) * kt_half_at(b, 1)) << 16;
}
inline unsigned kt_hfma2(unsigned a, unsigned b, unsigned c) {
  return kt_half_bits(kt_half_at(a, 0) * kt_half_at(b, 0) + kt_half_at(c, 0)) |
         kt_half_bits(kt_half_at(a, 1) * kt_half_at(b, 1) + kt_half_at(c, 1)) << 16;
}

// One exchange area per warp of the block.
struct kt_warp {
  kt_barrier* bar;
  const void* addr[32];
  unsigned a[32][4], b[32][2];
  float c[32][4];
};
static std::vector<kt_warp> kt_warps;
static inline int kt_lane() { return (int)threadIdx.x & 31; }
static inline kt_warp& kt_my_warp() { return kt_warps[threadIdx.x / 32]; }

// __shfl_xor_sync: each lane posts v, then reads lane l^o's.
static float kt_shfl_xor(float v, int o) {
  kt_warp& w = kt_my_warp();
  const int l = kt_lane();
  w.c[l][0] = v;
  w.bar->arrive_and_wait();
  const float r = w.c[l ^ o][0];
  w.bar->arrive_and_wait();
  return r;
}

// ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16: lanes 8i..8i+7 give the
// row addresses of matrix i; lane l receives in r[i] row l/4, columns
// 2(l%4) and 2(l%4)+1 of matrix i (with .trans: column l/4 of rows 2(l%4)
// and 2(l%4)+1), the first in the low half.
static void kt_ldsm(unsigned* r, const void* p, bool trans) {
  kt_warp& w = kt_my_warp();
  const int l = kt_lane();
  w.addr[l] = p;
  w.bar->arrive_and_wait();
  for (int i = 0; i < 4; ++i) {
    unsigned short lo, hi;
    if (!trans) {
      const unsigned short* row = (const unsigned short*)w.addr[8 * i + l / 4];
      lo = row[2 * (l % 4)];
      hi = row[2 * (l % 4) + 1];
    } else {
      lo = ((const unsigned short*)w.addr[8 * i + 2 * (l % 4)])[l / 4];
      hi = ((const unsigned short*)w.addr[8 * i + 2 * (l % 4) + 1])[l / 4];
    }
    r[i] = (unsigned)lo | ((unsigned)hi << 16);
  }
  w.bar->arrive_and_wait();
}
inline void kt_ldsm_x4(unsigned* r, const void* p) { kt_ldsm(r, p, false); }
inline void kt_ldsm_x4_trans(unsigned* r, const void* p) { kt_ldsm(r, p, true); }

static float kt_half_lo(unsigned r) { return kt_h2f((unsigned short)(r & 0xffff)); }
static float kt_half_hi(unsigned r) { return kt_h2f((unsigned short)(r >> 16)); }

// mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 (and .bf16) and m16n8k8 .tf32:
// group g = l/4, t = l%4. f16 A: r0 (g, 2t..2t+1), r1 (g+8, 2t..), r2 (g,
// 2t+8..), r3 (g+8, 2t+8..); B: r0 (k 2t..2t+1, n g), r1 (k 2t+8.., n g).
// TF32 A: r0 (g, t), r1 (g+8, t), r2 (g, t+4), r3 (g+8, t+4); B: r0 (k t,
// n g), r1 (k t+4, n g). C, D: c0, c1 (g, 2t, 2t+1), c2, c3 (g+8, 2t, 2t+1).
static void kt_mma(float* d, const unsigned* a, const unsigned* b, bool tf32) {
  kt_warp& w = kt_my_warp();
  const int l = kt_lane();
  for (int i = 0; i < 4; ++i) w.a[l][i] = a[i], w.c[l][i] = d[i];
  w.b[l][0] = b[0], w.b[l][1] = b[1];
  w.bar->arrive_and_wait();
  const int K = tf32 ? 8 : 16;
  float A[16][16], B[16][8];
  for (int q = 0; q < 32; ++q) {
    const int g = q / 4, t = q % 4;
    if (tf32) {
      A[g][t] = __uint_as_float(w.a[q][0]);
      A[g + 8][t] = __uint_as_float(w.a[q][1]);
      A[g][t + 4] = __uint_as_float(w.a[q][2]);
      A[g + 8][t + 4] = __uint_as_float(w.a[q][3]);
      B[t][g] = __uint_as_float(w.b[q][0]);
      B[t + 4][g] = __uint_as_float(w.b[q][1]);
    } else {
      A[g][2 * t] = kt_half_lo(w.a[q][0]), A[g][2 * t + 1] = kt_half_hi(w.a[q][0]);
      A[g + 8][2 * t] = kt_half_lo(w.a[q][1]), A[g + 8][2 * t + 1] = kt_half_hi(w.a[q][1]);
      A[g][2 * t + 8] = kt_half_lo(w.a[q][2]), A[g][2 * t + 9] = kt_half_hi(w.a[q][2]);
      A[g + 8][2 * t + 8] = kt_half_lo(w.a[q][3]), A[g + 8][2 * t + 9] = kt_half_hi(w.a[q][3]);
      B[2 * t][g] = kt_half_lo(w.b[q][0]), B[2 * t + 1][g] = kt_half_hi(w.b[q][0]);
      B[2 * t + 8][g] = kt_half_lo(w.b[q][1]), B[2 * t + 9][g] = kt_half_hi(w.b[q][1]);
    }
  }
  const int g = l / 4, t = l % 4;
  for (int e = 0; e < 4; ++e) {
    const int row = g + 8 * (e / 2), col = 2 * t + (e % 2);
    float s = w.c[l][e];
    for (int k = 0; k < K; ++k) {
      float av = A[row][k], bv = B[k][col];
      if (tf32) {
        // Inputs that were not rounded to TF32 are truncated by the hardware.
        av = __uint_as_float(kt_float_bits(av) & 0xffffe000u);
        bv = __uint_as_float(kt_float_bits(bv) & 0xffffe000u);
      }
      s += av * bv;
    }
    d[e] = s;
  }
  w.bar->arrive_and_wait();
}
inline void kt_mma_f16(float* d, const unsigned* a, const unsigned* b) { kt_mma(d, a, b, false); }
// .bf16: the same layout, its halves converted by the bf16 kt_h2f.
inline void kt_mma_bf16(float* d, const unsigned* a, const unsigned* b) { kt_mma(d, a, b, false); }
inline void kt_mma_tf32(float* d, const unsigned* a, const unsigned* b) { kt_mma(d, a, b, true); }

// cvt.rna.tf32.f32: round to nearest, ties away from zero, at mantissa bit 13.
inline unsigned kt_tf32(float f) { return (kt_float_bits(f) + 0x1000u) & 0xffffe000u; }

// cp.async.cg.shared.global 16 bytes, its groups and waits.
// Each thread's groups and open copies (kt_run_block clears them).
struct kt_copy { void* dst; const void* src; };
static std::vector<std::vector<kt_copy>> kt_groups_of[kt_max_threads];
static std::vector<kt_copy> kt_open_of[kt_max_threads];
#define kt_groups kt_groups_of[threadIdx.x]
#define kt_open kt_open_of[threadIdx.x]
inline void kt_cp_async16(void* dst, const void* src) {
  if (((uintptr_t)dst & 15) || ((uintptr_t)src & 15)) {
    std::fprintf(stderr, "cp.async: misaligned 16-byte copy %p <- %p\n", dst, src);
    std::abort();
  }
#ifdef KT_CP_LAZY
  kt_open.push_back({dst, src});
#else
  std::memcpy(dst, src, 16);
#endif
}
inline void kt_cp_commit() {
  kt_groups.push_back(kt_open);
  kt_open.clear();
}
template <int N> inline void kt_cp_wait() {
  static_assert(N >= 0, "cp.async.wait_group takes a non-negative count");
  while ((int)kt_groups.size() > N) {
    for (auto& c : kt_groups.front()) std::memcpy(c.dst, c.src, 16);
    kt_groups.erase(kt_groups.begin());
  }
}

// kt_run_block runs one block of nt fibers, each calling body, to its end;
// it exits the program if they wait on each other forever.
static std::function<void()> kt_body;
static void kt_entry() {
  kt_body();
  kt_fibers[threadIdx.x].done = true;
  ++kt_events;
  swapcontext(&kt_fibers[threadIdx.x].ctx, &kt_sched);
}
static void kt_run_block(int nt) {
  for (int i = 0; i < nt; ++i) {
    kt_fiber& f = kt_fibers[i];
    if (!f.stack) f.stack = (char*)std::malloc(kt_stack);
    f.done = false;
    kt_groups_of[i].clear();
    kt_open_of[i].clear();
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack;
    f.ctx.uc_stack.ss_size = kt_stack;
    f.ctx.uc_link = nullptr;
    makecontext(&f.ctx, kt_entry, 0);
  }
  for (int live = nt; live > 0;) {
    const unsigned long long before = kt_events;
    live = 0;
    for (int i = 0; i < nt; ++i) {
      if (kt_fibers[i].done) continue;
      threadIdx = {(unsigned)i, 0, 0};
      swapcontext(&kt_sched, &kt_fibers[i].ctx);
      live += !kt_fibers[i].done;
    }
    if (live > 0 && kt_events == before) {
      std::fprintf(stderr, "deadlock: threads wait at a barrier that others never reach\n");
      std::exit(3);
    }
  }
}
