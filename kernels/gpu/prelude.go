package gpu

import (
	"fmt"
	"strings"

	"github.com/kerntune/kerntune/kernels"
)

// Each prelude maps the dialect onto one API. They are the only per-API text.

const cudaCommon = `#define LID ((int)threadIdx.x)
#define GROUP_X ((int)blockIdx.x)
#define GROUP_Y ((int)blockIdx.y)
#define SHARED(type, name, n) __shared__ __align__(16) type name[n]
#define BARRIER() __syncthreads()
#define EXP(x) __expf(x)
#define RSQRT(x) rsqrtf(x)
#define FMAX(a, b) fmaxf((a), (b))
#define FMA(a, b, c) fmaf((a), (b), (c))
#define NEG_BIG (-3.0e38f)
#define UNROLL_LOOP _Pragma("unroll")
#define KT_INLINE __device__ __forceinline__
// Sum or max over aligned segments of W threads: warp shuffles within a warp,
// then one partial per warp through threadgroup memory.
#define KT_SEG_REDUCE(NAME, OP) \
KT_INLINE float NAME(float v, const int W, float* scratch) { \
  if (W <= 32) { \
    for (int o = W / 2; o > 0; o >>= 1) v = OP(v, __shfl_xor_sync(0xffffffffu, v, o)); \
    return v; \
  } \
  for (int o = 16; o > 0; o >>= 1) v = OP(v, __shfl_xor_sync(0xffffffffu, v, o)); \
  const int wps = W / 32, warp = LID / 32, first = (warp / wps) * wps; \
  __syncthreads(); \
  if ((LID & 31) == 0) scratch[warp] = v; \
  __syncthreads(); \
  float r = scratch[first]; \
  for (int i = 1; i < wps; ++i) r = OP(r, scratch[first + i]); \
  return r; \
}
#define KT_ADD(a, b) ((a) + (b))
KT_SEG_REDUCE(kt_seg_sum, KT_ADD)
KT_SEG_REDUCE(kt_seg_max, fmaxf)
#define SEG_SUM(v, W, s) kt_seg_sum((v), (W), (s))
#define SEG_MAX(v, W, s) kt_seg_max((v), (W), (s))
` + cudaStream + `
`

// cudaStream: kt_ld and kt_st access one 2-, 4-, 8- or 16-byte value of
// global memory; S=1 marks the access streaming (ld/st.global.cs: evict
// first, for data a kernel reads or writes once: LOADV_STREAM,
// STOREV_STREAM), S=0 is a plain access. A host compiler (the tests'
// emulation) takes the plain one.
const cudaStream = `#ifdef __CUDA_ARCH__
#define KT_LDCS(V, R, SUF) KT_INLINE V kt_ldcs(const V* p) { V v; asm("ld.global.cs." SUF " %0, [%1];" : "=" R(v) : "l"(p)); return v; }
#define KT_STCS(V, R, SUF) KT_INLINE void kt_stcs(V* p, V v) { asm volatile("st.global.cs." SUF " [%0], %1;" :: "l"(p), R(v) : "memory"); }
KT_LDCS(unsigned short, "h", "u16")
KT_LDCS(unsigned int, "r", "u32")
KT_LDCS(float, "f", "f32")
KT_STCS(unsigned short, "h", "u16")
KT_STCS(unsigned int, "r", "u32")
KT_STCS(float, "f", "f32")
KT_INLINE uint2 kt_ldcs(const uint2* p) { uint2 v; asm("ld.global.cs.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p)); return v; }
KT_INLINE uint4 kt_ldcs(const uint4* p) { uint4 v; asm("ld.global.cs.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p)); return v; }
KT_INLINE float2 kt_ldcs(const float2* p) { float2 v; asm("ld.global.cs.v2.f32 {%0, %1}, [%2];" : "=f"(v.x), "=f"(v.y) : "l"(p)); return v; }
KT_INLINE float4 kt_ldcs(const float4* p) { float4 v; asm("ld.global.cs.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p)); return v; }
KT_INLINE void kt_stcs(uint2* p, uint2 v) { asm volatile("st.global.cs.v2.u32 [%0], {%1, %2};" :: "l"(p), "r"(v.x), "r"(v.y) : "memory"); }
KT_INLINE void kt_stcs(uint4* p, uint4 v) { asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};" :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory"); }
KT_INLINE void kt_stcs(float2* p, float2 v) { asm volatile("st.global.cs.v2.f32 [%0], {%1, %2};" :: "l"(p), "f"(v.x), "f"(v.y) : "memory"); }
KT_INLINE void kt_stcs(float4* p, float4 v) { asm volatile("st.global.cs.v4.f32 [%0], {%1, %2, %3, %4};" :: "l"(p), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w) : "memory"); }
#endif
template <int S, typename V> KT_INLINE V kt_ld(const V* p) {
#ifdef __CUDA_ARCH__
  if (S) return kt_ldcs(p);
#endif
  return *p;
}
template <int S, typename V> KT_INLINE void kt_st(V* p, V v) {
#ifdef __CUDA_ARCH__
  if (S) { kt_stcs(p, v); return; }
#endif
  *p = v;
}
#define LOADV(p, i, d) kt_loadv<0>((p), (i), (d))
#define LOADV_STREAM(p, i, d) kt_loadv<1>((p), (i), (d))
#define STOREV(p, i, d) kt_storev<0>((p), (i), (d))
#define STOREV_STREAM(p, i, d) kt_storev<1>((p), (i), (d))
`

var cudaF32 = `typedef float T;
#define LOAD(p, i) ((float)(p)[i])
#define STORE(p, i, v) ((p)[i] = (v))
template <int S> KT_INLINE void kt_loadv(const T* __restrict__ p, int i, float* d) {
#if VEC == 1
  d[0] = kt_ld<S>(p + i);
#elif VEC == 2
  const float2 a = kt_ld<S>(reinterpret_cast<const float2*>(p + i));
  d[0] = a.x; d[1] = a.y;
#else
  UNROLL_LOOP
  for (int j = 0; j < VEC; j += 4) {
    const float4 a = kt_ld<S>(reinterpret_cast<const float4*>(p + i + j));
    d[j] = a.x; d[j + 1] = a.y; d[j + 2] = a.z; d[j + 3] = a.w;
  }
#endif
}
template <int S> KT_INLINE void kt_storev(T* __restrict__ p, int i, const float* d) {
#if VEC == 1
  kt_st<S>(p + i, d[0]);
#elif VEC == 2
  kt_st<S>(reinterpret_cast<float2*>(p + i), make_float2(d[0], d[1]));
#else
  UNROLL_LOOP
  for (int j = 0; j < VEC; j += 4) kt_st<S>(reinterpret_cast<float4*>(p + i + j), make_float4(d[j], d[j + 1], d[j + 2], d[j + 3]));
#endif
}
KT_INLINE void kt_store2(T* __restrict__ p, int i, float a, float b) { *reinterpret_cast<float2*>(p + i) = make_float2(a, b); }
`

// f16 is stored as unsigned short and converted with PTX, so NVRTC needs no
// cuda_fp16.h include path.
const cudaF16 = `typedef unsigned short T;
#define KT_F16 1
#define KT_CVT16 "f16"
KT_INLINE float kt_h2f(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
KT_INLINE unsigned short kt_f2h(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
` + cuda16

// bf16 is stored as unsigned short too, with the same vector loads and
// stores (cuda16); kt_h2f and kt_f2h convert bf16 here: widening is a
// 16-bit shift (a bfloat16 is a float32's upper half) and rounding is
// PTX's cvt.rn.bf16.f32 (sm_80 and later; before it, the same round to
// nearest even in integer arithmetic, NaN kept quiet). So NVRTC needs no
// cuda_bf16.h (__nv_bfloat16) and no include path, like f16. KT_BF16
// selects the bf16 mma.sync of the fragment operations.
const cudaBF16 = `typedef unsigned short T;
#define KT_BF16 1
#define KT_CVT16 "bf16"
KT_INLINE float kt_h2f(unsigned short h) { return __uint_as_float((unsigned)h << 16); }
#if __CUDA_ARCH__ >= 800
KT_INLINE unsigned short kt_f2h(float f) { unsigned short h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
#else
KT_INLINE unsigned short kt_f2h(float f) { unsigned u = __float_as_uint(f); if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u); u += 0x7fffu + ((u >> 16) & 1u); return (unsigned short)(u >> 16); }
#endif
` + cuda16

// cuda16 is the part of the 16-bit preludes after the conversions
// kt_h2f and kt_f2h: LOAD, STORE and their vector forms.
const cuda16 = `#define LOAD(p, i) kt_h2f((p)[i])
#define STORE(p, i, v) ((p)[i] = kt_f2h(v))
template <int S> KT_INLINE void kt_loadv(const T* __restrict__ p, int i, float* d) {
#if VEC == 1
  d[0] = kt_h2f(kt_ld<S>(p + i));
#elif VEC == 2
  const unsigned int a = kt_ld<S>(reinterpret_cast<const unsigned int*>(p + i));
  d[0] = kt_h2f((unsigned short)(a & 0xffffu)); d[1] = kt_h2f((unsigned short)(a >> 16));
#elif VEC == 4
  const uint2 a = kt_ld<S>(reinterpret_cast<const uint2*>(p + i));
  d[0] = kt_h2f((unsigned short)(a.x & 0xffffu)); d[1] = kt_h2f((unsigned short)(a.x >> 16));
  d[2] = kt_h2f((unsigned short)(a.y & 0xffffu)); d[3] = kt_h2f((unsigned short)(a.y >> 16));
#else
  const uint4 a = kt_ld<S>(reinterpret_cast<const uint4*>(p + i));
  const unsigned int w[4] = {a.x, a.y, a.z, a.w};
  UNROLL_LOOP
  for (int j = 0; j < 4; ++j) { d[2 * j] = kt_h2f((unsigned short)(w[j] & 0xffffu)); d[2 * j + 1] = kt_h2f((unsigned short)(w[j] >> 16)); }
#endif
}
// kt_pack2 rounds two floats into one word, a in the low half: one
// cvt.rn.f16x2.f32 (bf16x2) on sm_80 and later instead of two conversions
// and a merge, the same values.
KT_INLINE unsigned int kt_pack2(float a, float b) {
#if __CUDA_ARCH__ >= 800
  unsigned int r;
  asm("cvt.rn." KT_CVT16 "x2.f32 %0, %1, %2;" : "=r"(r) : "f"(b), "f"(a));
  return r;
#else
  return (unsigned int)kt_f2h(a) | ((unsigned int)kt_f2h(b) << 16);
#endif
}
template <int S> KT_INLINE void kt_storev(T* __restrict__ p, int i, const float* d) {
#if VEC == 1
  kt_st<S>(p + i, kt_f2h(d[0]));
#elif VEC == 2
  kt_st<S>(reinterpret_cast<unsigned int*>(p + i), kt_pack2(d[0], d[1]));
#elif VEC == 4
  kt_st<S>(reinterpret_cast<uint2*>(p + i), make_uint2(kt_pack2(d[0], d[1]), kt_pack2(d[2], d[3])));
#else
  kt_st<S>(reinterpret_cast<uint4*>(p + i), make_uint4(kt_pack2(d[0], d[1]), kt_pack2(d[2], d[3]), kt_pack2(d[4], d[5]), kt_pack2(d[6], d[7])));
#endif
}
KT_INLINE void kt_store2(T* __restrict__ p, int i, float a, float b) { *reinterpret_cast<unsigned int*>(p + i) = kt_pack2(a, b); }
`

// cudaPTX holds every PTX instruction of the fragment operations (sm_80 and
// later), so that the rest of the prelude is plain CUDA C++.
const cudaPTX = `KT_INLINE unsigned kt_smem_addr(const void* p) {
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
KT_INLINE void kt_cp_async16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(kt_smem_addr(dst)), "l"(src) : "memory");
}
KT_INLINE void kt_cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> KT_INLINE void kt_cp_wait() { asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory"); }
KT_INLINE void kt_ldsm_x4(unsigned* r, const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(kt_smem_addr(p)));
}
KT_INLINE void kt_ldsm_x4_trans(unsigned* r, const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(kt_smem_addr(p)));
}
KT_INLINE void kt_mma_f16(float* d, const unsigned* a, const unsigned* b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
KT_INLINE void kt_mma_bf16(float* d, const unsigned* a, const unsigned* b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
KT_INLINE void kt_mma_tf32(float* d, const unsigned* a, const unsigned* b) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
KT_INLINE unsigned kt_tf32(float f) { unsigned r; asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(f)); return r; }
`

// cudaFragments maps the fragment operations onto mma.sync. A fragment is
// 16×16 (FRAG_K 16 for f16 and bf16, 8 for TF32): one A operand of mma.sync
// m16n8k16 (m16n8k8) and two B operands side by side, so that one
// ldmatrix.x4 fills it, and its accumulator is two m16n8 tiles. Lane l of a
// warp holds, per m16n8 tile h, rows l/4 and l/4+8 at columns 8h+2(l%4) and
// +1 (PTX ISA, "Matrix Fragments for mma.m16n8k16"). Threadgroup tiles hold
// T itself (16-bit bits or float) and fill from global memory with cp.async,
// 16 bytes a copy, a chunk at a misaligned or partial edge element by element.
const cudaFragments = `typedef T SMEM_T;
#define SHARED_PTR(type) type*
#define SHARED_DYN(type, name, n) extern __shared__ __align__(16) type name[]
#define COPY_N (16 / (int)sizeof(T))
KT_INLINE void kt_copy_chunk(SMEM_T* dst, const T* __restrict__ src, int i, int n) {
  if (n == COPY_N && (i & (COPY_N - 1)) == 0) {
    kt_cp_async16(dst, src + i);
  } else {
    UNROLL_LOOP
    for (int j = 0; j < COPY_N; ++j) dst[j] = j < n ? src[i + j] : (T)0;
  }
}
#define COPY_CHUNK(d, s, i, n) kt_copy_chunk((d), (s), (i), (n))
#define COPY_FULL(d, s, i) kt_cp_async16((d), (s) + (i))
#define COPY_COMMIT() kt_cp_commit()
#define COPY_WAIT(n) kt_cp_wait<(n)>()
struct kt_frag_a { unsigned r[4]; };
struct kt_frag_b { unsigned r[4]; };
struct kt_frag_c { float v[8]; };
#define FRAG_A kt_frag_a
#define FRAG_B kt_frag_b
#define FRAG_C kt_frag_c
KT_INLINE void kt_frag_zero(kt_frag_c& c) {
  UNROLL_LOOP
  for (int i = 0; i < 8; ++i) c.v[i] = 0.0f;
}
// A block, element (i, k) at p[i·ld + k]: ldmatrix rows i, 16 bytes of k.
KT_INLINE void kt_frag_load_a(kt_frag_a& f, const SMEM_T* p, int ld) {
  const int l = LID & 31;
#if TF32
  kt_ldsm_x4(f.r, p + (l & 15) * ld + (l >> 4) * 4);
  UNROLL_LOOP
  for (int i = 0; i < 4; ++i) f.r[i] = kt_tf32(__uint_as_float(f.r[i]));
#else
  kt_ldsm_x4(f.r, p + (l & 15) * ld + (l >> 4) * 8);
#endif
}
// A block stored k-major, element (i, k) at p[k·ld + i].
KT_INLINE void kt_frag_load_at(kt_frag_a& f, const SMEM_T* p, int ld) {
  const int l = LID & 31;
#if TF32
  const int g = l >> 2, t = l & 3;
  f.r[0] = kt_tf32(p[t * ld + g]);
  f.r[1] = kt_tf32(p[t * ld + g + 8]);
  f.r[2] = kt_tf32(p[(t + 4) * ld + g]);
  f.r[3] = kt_tf32(p[(t + 4) * ld + g + 8]);
#else
  kt_ldsm_x4_trans(f.r, p + ((l & 7) + ((l >> 4) << 3)) * ld + ((l >> 3) & 1) * 8);
#endif
}
// B block, element (k, j) at p[k·ld + j].
KT_INLINE void kt_frag_load_b(kt_frag_b& f, const SMEM_T* p, int ld) {
  const int l = LID & 31;
#if TF32
  const int g = l >> 2, t = l & 3;
  f.r[0] = kt_tf32(p[t * ld + g]);
  f.r[1] = kt_tf32(p[(t + 4) * ld + g]);
  f.r[2] = kt_tf32(p[t * ld + 8 + g]);
  f.r[3] = kt_tf32(p[(t + 4) * ld + 8 + g]);
#else
  kt_ldsm_x4_trans(f.r, p + (l & 15) * ld + (l >> 4) * 8);
#endif
}
KT_INLINE void kt_frag_mma(kt_frag_c& c, const kt_frag_a& a, const kt_frag_b& b) {
#if TF32
  kt_mma_tf32(c.v, a.r, b.r);
  kt_mma_tf32(c.v + 4, a.r, b.r + 2);
#elif KT_BF16
  kt_mma_bf16(c.v, a.r, b.r);
  kt_mma_bf16(c.v + 4, a.r, b.r + 2);
#else
  kt_mma_f16(c.v, a.r, b.r);
  kt_mma_f16(c.v + 4, a.r, b.r + 2);
#endif
}
// The accumulator into rows gi.., columns gj.. of C (row stride ldc), edges checked.
KT_INLINE void kt_frag_store(const kt_frag_c& c, T* __restrict__ C, int ldc, int gi, int gj, int M, int N) {
  const int l = LID & 31, g = l >> 2, t = l & 3;
  UNROLL_LOOP
  for (int h = 0; h < 2; ++h) {
    UNROLL_LOOP
    for (int r = 0; r < 2; ++r) {
      const int row = gi + g + 8 * r, col = gj + 8 * h + 2 * t;
      const float v0 = c.v[4 * h + 2 * r], v1 = c.v[4 * h + 2 * r + 1];
      if (row < M) {
        if (col + 1 < N && (ldc & 1) == 0) {
          kt_store2(C, row * ldc + col, v0, v1);
        } else {
          if (col < N) STORE(C, row * ldc + col, v0);
          if (col + 1 < N) STORE(C, row * ldc + col + 1, v1);
        }
      }
    }
  }
}
// The accumulator into threadgroup floats, element (i, j) at p[i·ld + j].
KT_INLINE void kt_frag_store_tg(const kt_frag_c& c, float* p, int ld) {
  const int l = LID & 31, g = l >> 2, t = l & 3;
  UNROLL_LOOP
  for (int h = 0; h < 2; ++h) {
    UNROLL_LOOP
    for (int r = 0; r < 2; ++r) {
      p[(g + 8 * r) * ld + 8 * h + 2 * t] = c.v[4 * h + 2 * r];
      p[(g + 8 * r) * ld + 8 * h + 2 * t + 1] = c.v[4 * h + 2 * r + 1];
    }
  }
}
#define FRAG_ZERO(c) kt_frag_zero(c)
#define FRAG_LOAD_A(f, p, ld) kt_frag_load_a((f), (p), (ld))
#define FRAG_LOAD_AT(f, p, ld) kt_frag_load_at((f), (p), (ld))
#define FRAG_LOAD_B(f, p, ld) kt_frag_load_b((f), (p), (ld))
#define FRAG_MMA(c, a, b) kt_frag_mma((c), (a), (b))
#define FRAG_STORE(c, C, ldc, gi, gj, M, N, scratch) kt_frag_store((c), (C), (ldc), (gi), (gj), (M), (N))
#define FRAG_STORE_TG(c, p, ld) kt_frag_store_tg((c), (p), (ld))
`

// metalInclude opens every MSL source, generated or raw, before the
// parameter #defines.
const metalInclude = `#include <metal_stdlib>
using namespace metal;
`

// metalCommon is the Metal prelude of a T that MSL converts itself.
var metalCommon = metalBase + metalIO

// metalBase is the part of the Metal prelude that does not use T.
const metalBase = `#define LID ((int)kt_tid.x)
#define GROUP_X ((int)kt_gid.x)
#define GROUP_Y ((int)kt_gid.y)
#define SHARED(type, name, n) threadgroup type name[n]
#define BARRIER() threadgroup_barrier(mem_flags::mem_threadgroup)
#define EXP(x) exp(x)
#define RSQRT(x) rsqrt(x)
#define FMAX(a, b) fmax((a), (b))
#define FMA(a, b, c) fma((a), (b), (c))
#define NEG_BIG (-3.0e38f)
#define UNROLL_LOOP _Pragma("unroll")
// Apple GPUs execute SIMD-groups of 32 threads: shuffles within one, then
// one partial per SIMD-group through threadgroup memory.
#define KT_SEG_REDUCE(NAME, OP) \
inline float NAME(float v, const int W, threadgroup float* scratch, const uint lid) { \
  if (W <= 32) { \
    for (int o = W / 2; o > 0; o >>= 1) v = OP(v, simd_shuffle_xor(v, (ushort)o)); \
    return v; \
  } \
  for (int o = 16; o > 0; o >>= 1) v = OP(v, simd_shuffle_xor(v, (ushort)o)); \
  const int wps = W / 32, sg = (int)lid / 32, first = (sg / wps) * wps; \
  threadgroup_barrier(mem_flags::mem_threadgroup); \
  if ((lid & 31u) == 0u) scratch[sg] = v; \
  threadgroup_barrier(mem_flags::mem_threadgroup); \
  float r = scratch[first]; \
  for (int i = 1; i < wps; ++i) r = OP(r, scratch[first + i]); \
  return r; \
}
#define KT_ADD(a, b) ((a) + (b))
KT_SEG_REDUCE(kt_seg_sum, KT_ADD)
KT_SEG_REDUCE(kt_seg_max, fmax)
#define SEG_SUM(v, W, s) kt_seg_sum((v), (W), (s), kt_tid.x)
#define SEG_MAX(v, W, s) kt_seg_max((v), (W), (s), kt_tid.x)
// MSL has no cache hints on device memory: streaming accesses are plain.
#define LOADV_STREAM(p, i, d) LOADV(p, i, d)
#define STOREV_STREAM(p, i, d) STOREV(p, i, d)
`

// metalIO is LOAD, STORE and their vector forms where T converts to and
// from float in MSL itself (float, half, bfloat).
var metalIO = `#define LOAD(p, i) ((float)(p)[i])
#define STORE(p, i, v) ((p)[i] = (T)(v))
` + vecLoad(Metal, "LOADV", "T", "float", "float") + `inline void kt_storev(device T* p, int i, thread const float* d) {
#if VEC == 1
  p[i] = (T)d[0];
#elif VEC == 2
  *((device KT_VEC2*)(p + i)) = KT_VEC2((T)d[0], (T)d[1]);
#else
  for (int j = 0; j < VEC; j += 4) *((device KT_VEC4*)(p + i + j)) = KT_VEC4((T)d[j], (T)d[j + 1], (T)d[j + 2], (T)d[j + 3]);
#endif
}
#define STOREV(p, i, d) kt_storev((p), (i), (d))
`

// metalFragments maps the fragment operations onto simdgroup_matrix 8×8.
// The threadgroup tiles and the A and B fragments hold KT_TILE, chosen per
// dtype (metalTiles); accumulators are simdgroup_float8x8 in every dtype,
// since half accumulators would miss the f16 tolerance, and
// simdgroup_multiply_accumulate takes half or bfloat operands into a float
// accumulator (as llama.cpp's kernel_mul_mm does). Copies into threadgroup
// memory are immediate (Metal has no asynchronous copy into it); the
// accumulator leaves through an 8×8 float threadgroup scratch per
// SIMD-group so that edges can be checked.
const metalFragments = `#define SMEM_T KT_TILE
#define SHARED_PTR(type) threadgroup type*
#define SHARED_DYN(type, name, n) threadgroup type name[n]
#define COPY_N (16 / (int)sizeof(T))
inline void kt_copy_chunk(threadgroup SMEM_T* dst, device const T* src, int i, int n) {
  for (int j = 0; j < COPY_N; ++j) dst[j] = j < n ? (SMEM_T)LOAD(src, i + j) : (SMEM_T)0.0f;
}
#define COPY_CHUNK(d, s, i, n) kt_copy_chunk((d), (s), (i), (n))
#define COPY_FULL(d, s, i) kt_copy_chunk((d), (s), (i), COPY_N)
#define COPY_COMMIT()
#define COPY_WAIT(n)
#define FRAG_A KT_FRAG_AB
#define FRAG_B KT_FRAG_AB
#define FRAG_C simdgroup_float8x8
#define FRAG_ZERO(c) ((c) = make_filled_simdgroup_matrix<float, 8, 8>(0.0f))
#define FRAG_LOAD_A(f, p, ld) simdgroup_load((f), (p), (ld))
#define FRAG_LOAD_AT(f, p, ld) simdgroup_load((f), (p), (ld), ulong2(0, 0), true)
#define FRAG_LOAD_B(f, p, ld) simdgroup_load((f), (p), (ld))
#define FRAG_MMA(c, a, b) simdgroup_multiply_accumulate((c), (a), (b), (c))
inline void kt_frag_store(simdgroup_float8x8 c, device T* C, int ldc, int gi, int gj, int M, int N, threadgroup float* s, uint lane) {
  simdgroup_store(c, s, 8);
  simdgroup_barrier(mem_flags::mem_threadgroup);
  const int r = (int)lane / 4, col = ((int)lane % 4) * 2;
  if (gi + r < M) {
    if (gj + col < N) STORE(C, (gi + r) * ldc + gj + col, s[r * 8 + col]);
    if (gj + col + 1 < N) STORE(C, (gi + r) * ldc + gj + col + 1, s[r * 8 + col + 1]);
  }
  simdgroup_barrier(mem_flags::mem_threadgroup);
}
#define FRAG_STORE(c, C, ldc, gi, gj, M, N, scratch) kt_frag_store((c), (C), (ldc), (gi), (gj), (M), (N), (scratch), kt_tid.x & 31u)
#define FRAG_STORE_TG(c, p, ld) simdgroup_store((c), (p), (ulong)(ld))
`

// metalTiles chooses the element of the fragment tiles: f32 in float, f16
// in half (half the threadgroup memory of float tiles), bf16 in bfloat
// where MSL has it (__HAVE_BFLOAT__, Metal 3.1: simdgroup_bfloat8x8) and in
// float where bf16 is ushort storage, which no simdgroup_matrix loads.
var metalTiles = map[kernels.DType]string{
	kernels.F32:  "#define KT_TILE float\n#define KT_FRAG_AB simdgroup_float8x8\n",
	kernels.F16:  "#define KT_TILE half\n#define KT_FRAG_AB simdgroup_half8x8\n",
	kernels.BF16: "#if defined(__HAVE_BFLOAT__)\n#define KT_TILE bfloat\n#define KT_FRAG_AB simdgroup_bfloat8x8\n#else\n#define KT_TILE float\n#define KT_FRAG_AB simdgroup_float8x8\n#endif\n",
}

// metalBF16 is bf16 on Metal: MSL's bfloat where the compiler has it
// (__HAVE_BFLOAT__: Metal 3.1, macOS 14), with metalIO's conversions;
// otherwise 16-bit storage with f32 math, as MLX does on older systems
// (its _MLX_BFloat16): ushort holding the upper half of a float32,
// widened by a shift and rounded to nearest even in integer arithmetic.
var metalBF16 = metalBase + `#if defined(__HAVE_BFLOAT__)
typedef bfloat T;
#define KT_VEC2 bfloat2
#define KT_VEC4 bfloat4
` + metalIO + `#else
typedef ushort T;
` + metalBF16Storage + `#endif
`

const metalBF16Storage = `inline float kt_b2f(ushort h) { return as_type<float>((uint)h << 16); }
inline ushort kt_f2b(float f) {
  uint u = as_type<uint>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (ushort)(u >> 16);
}
#define LOAD(p, i) kt_b2f((p)[i])
#define STORE(p, i, v) ((p)[i] = kt_f2b(v))
inline void kt_loadv(device const T* p, int i, thread float* d) {
#if VEC == 1
  d[0] = kt_b2f(p[i]);
#else
  for (int j = 0; j < VEC; j += 2) {
    const uint a = *((device const uint*)(p + i + j));
    d[j] = as_type<float>(a << 16); d[j + 1] = as_type<float>(a & 0xffff0000u);
  }
#endif
}
#define LOADV(p, i, d) kt_loadv((p), (i), (d))
inline void kt_storev(device T* p, int i, thread const float* d) {
#if VEC == 1
  p[i] = kt_f2b(d[0]);
#else
  for (int j = 0; j < VEC; j += 2) *((device uint*)(p + i + j)) = (uint)kt_f2b(d[j]) | ((uint)kt_f2b(d[j + 1]) << 16);
#endif
}
#define STOREV(p, i, d) kt_storev((p), (i), (d))
`

const openclCommon = `#define LID ((int)get_local_id(0))
#define GROUP_X ((int)get_group_id(0))
#define GROUP_Y ((int)get_group_id(1))
#define SHARED(type, name, n) __local type name[n]
#define BARRIER() barrier(CLK_LOCAL_MEM_FENCE)
#define EXP(x) exp(x)
#define RSQRT(x) rsqrt(x)
#define FMAX(a, b) fmax((a), (b))
#define FMA(a, b, c) fma((a), (b), (c))
#define NEG_BIG (-3.0e38f)
#define UNROLL_LOOP _Pragma("unroll")
// OpenCL C 1.2 has no subgroup functions everywhere (PoCL has none): a tree
// in local memory over each segment.
#define KT_SEG_REDUCE(NAME, OP) \
float NAME(float v, const int W, __local float* s) { \
  const int lid = (int)get_local_id(0); \
  barrier(CLK_LOCAL_MEM_FENCE); \
  s[lid] = v; \
  barrier(CLK_LOCAL_MEM_FENCE); \
  for (int o = W / 2; o > 0; o >>= 1) { \
    if ((lid & (W - 1)) < o) s[lid] = OP(s[lid], s[lid + o]); \
    barrier(CLK_LOCAL_MEM_FENCE); \
  } \
  return s[lid & ~(W - 1)]; \
}
#define KT_ADD(a, b) ((a) + (b))
KT_SEG_REDUCE(kt_seg_sum, KT_ADD)
KT_SEG_REDUCE(kt_seg_max, fmax)
#define SEG_SUM(v, W, s) kt_seg_sum((v), (W), (s))
#define SEG_MAX(v, W, s) kt_seg_max((v), (W), (s))
#define LOADV_STREAM(p, i, d) LOADV(p, i, d)
#define STOREV_STREAM(p, i, d) STOREV(p, i, d)
`

const openclF32 = `typedef float T;
#define LOAD(p, i) ((p)[i])
#define STORE(p, i, v) ((p)[i] = (v))
void kt_loadv(__global const T* restrict p, int i, float* d) {
  for (int j = 0; j < VEC; ++j) d[j] = p[i + j];
}
#define LOADV(p, i, d) kt_loadv((p), (i), (d))
void kt_storev(__global T* restrict p, int i, const float* d) {
  for (int j = 0; j < VEC; ++j) p[i + j] = d[j];
}
#define STOREV(p, i, d) kt_storev((p), (i), (d))
`

// OpenCL C 1.2 without cl_khr_fp16 may only move half data with vload_half /
// vstore_half, which convert to and from float: exactly f16 I/O, f32 math.
const openclF16 = `typedef half T;
#define LOAD(p, i) vload_half((i), (p))
#define STORE(p, i, v) vstore_half((v), (i), (p))
void kt_loadv(__global const T* restrict p, int i, float* d) {
  for (int j = 0; j < VEC; ++j) d[j] = vload_half(i + j, p);
}
#define LOADV(p, i, d) kt_loadv((p), (i), (d))
void kt_storev(__global T* restrict p, int i, const float* d) {
  for (int j = 0; j < VEC; ++j) vstore_half(d[j], i + j, p);
}
#define STOREV(p, i, d) kt_storev((p), (i), (d))
`

// OpenCL C has no bf16 type: ushort storage holding a float32's upper
// half, widened by a shift and rounded to nearest even in integer
// arithmetic (NaN kept quiet), f32 math.
const openclBF16 = `typedef ushort T;
float kt_b2f(ushort h) { return as_float((uint)h << 16); }
ushort kt_f2b(float f) {
  uint u = as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (ushort)(u >> 16);
}
#define LOAD(p, i) kt_b2f((p)[i])
#define STORE(p, i, v) ((p)[i] = kt_f2b(v))
void kt_loadv(__global const T* restrict p, int i, float* d) {
  for (int j = 0; j < VEC; ++j) d[j] = kt_b2f(p[i + j]);
}
#define LOADV(p, i, d) kt_loadv((p), (i), (d))
void kt_storev(__global T* restrict p, int i, const float* d) {
  for (int j = 0; j < VEC; ++j) p[i + j] = kt_f2b(d[j]);
}
#define STOREV(p, i, d) kt_storev((p), (i), (d))
`

// wordPrelude is LOADW(p, i, d) per API, for bodies that take uint32 word
// buffers (Arg.Words): VEC words from word i on (aligned to VEC) into
// unsigned int d[VEC], with one vector load where the API has one.
var wordPrelude = map[API]string{
	CUDA: vecLoad(CUDA, "LOADW", "unsigned int", "unsigned int", "uint") + `// 4 elements of T from element i on (aligned to 4), widened: one 8- or
// 16-byte load.
KT_INLINE void kt_loadx4(const T* __restrict__ p, int i, float* d) {
  __align__(16) T h[4];
  if (sizeof(T) == 4) *reinterpret_cast<uint4*>(h) = *reinterpret_cast<const uint4*>(p + i);
  else *reinterpret_cast<uint2*>(h) = *reinterpret_cast<const uint2*>(p + i);
  UNROLL_LOOP
  for (int j = 0; j < 4; ++j) d[j] = LOAD(h, j);
}
#define LOADX4(p, i, d) kt_loadx4((p), (i), (d))
// w & m (below 2^23) to float without a conversion instruction (16 per
// clock per SM): the masked bits ORed into the mantissa of 2^23, minus 2^23;
// exact. (The mask and the OR compile to two LOP3s; an inline-PTX lop3
// doing both in one made NVRTC about 3.5 times slower on qgemv's body, with
// no gain in time measured: docs/results/cuda-h100-h200.md.)
KT_INLINE float kt_qm2f(unsigned int w, unsigned int m) {
  return __uint_as_float(0x4B000000u | (w & m)) - 8388608.0f;
}
#define QM2F(w, m) kt_qm2f((w), (m))
#if defined(KT_F16) || defined(KT_BF16)
// 16-bit activations (f16 and bf16 alike): a word dequantised two values an
// instruction, in f16 pairs. A field of a value, masked in both 16-bit
// halves and ORed with 0x6400 (1024, whose unit in the last place is 1),
// reads as the pair (1024 + q·2^p), p its offset in the byte, and
// subtracting 1024 + 2^(bits−1)·2^p leaves (q − 2^(bits−1))·2^p exactly:
// centred, so the products and the sums that f16 rounds are about half
// the size. The 2^p cancels in x, staged per pair times 2^-p (with the
// step's scale), so no value is shifted; w >> 8 (or, at 8 bits, one
// byte_perm a pair) reaches the high byte of each half. Each pair is then
// multiplied and added in one fma.rn.f16x2 into a running pair of the
// step: 13 instructions a 4-bit word (a shift, 4 LOP3s, 4 subtractions, 4
// fmas), 6 an 8-bit word. The step's pair is added in f32 (KT_QH2F).
#define KT_QH2 1
#ifdef KT_BF16
#define KT_QXS0 6
#else
#define KT_QXS0 2
#endif
KT_INLINE float kt_half2f(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
KT_INLINE unsigned short kt_f2half(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
KT_INLINE unsigned int kt_hsub2(unsigned int a, unsigned int b) { unsigned int d; asm("sub.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b)); return d; }
KT_INLINE unsigned int kt_hfma2(unsigned int a, unsigned int b, unsigned int c) { unsigned int d; asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c)); return d; }
KT_INLINE unsigned int kt_qpack(float a, float b) { return (unsigned int)kt_f2half(a) | ((unsigned int)kt_f2half(b) << 16); }
#define KT_QPACK(a, b) kt_qpack((a), (b))
// One word's values, centred, as f16 pairs (kt_qdeq*h), and their products
// with x's pairs added to d (kt_qdot*h): (x0, x4)(x1, x5)(x2, x6)(x3, x7)
// at 4 bits, (x0, x2)(x1, x3) at 8 (each half's low byte's values first,
// then its high byte's). A word is dequantised once for every row of x
// that it multiplies. 2-bit words take the f32 form (qgemv's body): a
// step's f16 sum of 32 values a half erred past f16's tolerance on one
// draw in 200 of a one-output shape.
#define KT_QV(w, m, c) kt_hsub2(((w) & (m)) | 0x64006400u, (c))
KT_INLINE uint4 kt_qdeq4h(unsigned int w) {
  const unsigned int w8 = w >> 8;
  return make_uint4(KT_QV(w, 0x000F000Fu, 0x64086408u), KT_QV(w, 0x00F000F0u, 0x64806480u),
                    KT_QV(w8, 0x000F000Fu, 0x64086408u), KT_QV(w8, 0x00F000F0u, 0x64806480u));
}
KT_INLINE unsigned int kt_qdot4h(uint4 q, uint4 x, unsigned int d) {
  d = kt_hfma2(x.x, q.x, d);
  d = kt_hfma2(x.y, q.y, d);
  d = kt_hfma2(x.z, q.z, d);
  return kt_hfma2(x.w, q.w, d);
}
// 8 bits: byte_perm puts bytes 0 and 2 (then 1 and 3) under 0x64 each.
KT_INLINE uint2 kt_qdeq8h(unsigned int w) {
  return make_uint2(kt_hsub2(__byte_perm(w, 0x64646464u, 0x4240u), 0x64806480u),
                    kt_hsub2(__byte_perm(w, 0x64646464u, 0x4341u), 0x64806480u));
}
KT_INLINE unsigned int kt_qdot8h(uint2 q, uint2 x, unsigned int d) {
  d = kt_hfma2(x.x, q.x, d);
  return kt_hfma2(x.y, q.y, d);
}
KT_INLINE float kt_qh2f(unsigned int d) { return kt_half2f((unsigned short)(d & 0xffffu)) + kt_half2f((unsigned short)(d >> 16)); }
#define KT_QH2F(d) kt_qh2f(d)
#endif
`,
	Metal: vecLoad(Metal, "LOADW", "uint", "uint", "uint") + `inline void kt_loadx4(device const T* p, int i, thread float* d) {
#ifdef KT_VEC4
  const float4 a = float4(*((device const KT_VEC4*)(p + i)));
  d[0] = a.x; d[1] = a.y; d[2] = a.z; d[3] = a.w;
#else
  for (int j = 0; j < 4; ++j) d[j] = LOAD(p, i + j);
#endif
}
#define LOADX4(p, i, d) kt_loadx4((p), (i), (d))
#define QM2F(w, m) ((float)((w) & (m)))
`,
	OpenCL: `void kt_loadw(__global const uint* restrict p, int i, uint* d) {
  for (int j = 0; j < VEC; ++j) d[j] = p[i + j];
}
#define LOADW(p, i, d) kt_loadw((p), (i), (d))
void kt_loadx4(__global const T* restrict p, int i, float* d) {
  for (int j = 0; j < 4; ++j) d[j] = LOAD(p, i + j);
}
#define LOADX4(p, i, d) kt_loadx4((p), (i), (d))
#define QM2F(w, m) ((float)((w) & (m)))
`,
}

// vecLoad is the CUDA or Metal source of MACRO(p, i, d) (LOADV, LOADW):
// VEC elements of type elem from element i on (aligned to VEC) into d of
// type to, with an 8-byte load of vec2 at VEC = 2 and 16-byte ones of vec4
// from 4 on. to is float (elem T, whose vector types Metal names KT_VEC2
// and KT_VEC4 and converts) or the word type itself.
func vecLoad(api API, macro, elem, to, vec string) string {
	name := "kt_" + strings.ToLower(macro)
	one, v2, v4 := "p[i]", vec+"2", vec+"4"
	var head, ld2, ld4, unroll string
	switch api {
	case CUDA:
		head = fmt.Sprintf("KT_INLINE void %s(const %s* __restrict__ p, int i, %s* d) {", name, elem, to)
		ld2 = fmt.Sprintf("*reinterpret_cast<const %s*>(p + i)", v2)
		ld4 = fmt.Sprintf("*reinterpret_cast<const %s*>(p + i + j)", v4)
		unroll = "  UNROLL_LOOP\n"
	case Metal:
		head = fmt.Sprintf("inline void %s(device const %s* p, int i, thread %s* d) {", name, elem, to)
		ld2 = fmt.Sprintf("*((device const %s*)(p + i))", v2)
		ld4 = fmt.Sprintf("*((device const %s*)(p + i + j))", v4)
		if elem == "T" {
			one = "(float)p[i]"
			ld2 = fmt.Sprintf("%s(*((device const KT_VEC2*)(p + i)))", v2)
			ld4 = fmt.Sprintf("%s(*((device const KT_VEC4*)(p + i + j)))", v4)
		}
	}
	return head + `
#if VEC == 1
  d[0] = ` + one + `;
#elif VEC == 2
  const ` + v2 + ` a = ` + ld2 + `;
  d[0] = a.x; d[1] = a.y;
#else
` + unroll + `  for (int j = 0; j < VEC; j += 4) {
    const ` + v4 + ` a = ` + ld4 + `;
    d[j] = a.x; d[j + 1] = a.y; d[j + 2] = a.z; d[j + 3] = a.w;
  }
#endif
}
#define ` + macro + `(p, i, d) ` + name + `((p), (i), (d))
`
}

func prelude(api API, dt kernels.DType, vec int) (string, error) {
	if vec != 1 && vec != 2 && vec%4 != 0 {
		return "", fmt.Errorf("VEC=%d: vector loads take 1, 2 or a multiple of 4 elements", vec)
	}
	// The fragment operations, only where a candidate uses them (MMA=1).
	frag := func(s string) string { return "#if MMA\n" + s + "#endif\n" }
	switch api {
	case CUDA:
		switch dt {
		case kernels.F32:
			return cudaCommon + cudaF32 + frag(cudaPTX+cudaFragments), nil
		case kernels.F16:
			return cudaCommon + cudaF16 + frag(cudaPTX+cudaFragments), nil
		case kernels.BF16:
			return cudaCommon + cudaBF16 + frag(cudaPTX+cudaFragments), nil
		}
	case Metal:
		switch dt {
		case kernels.F32:
			return strings.Replace(metalCommon, "#define LID", "typedef float T;\n#define KT_VEC2 float2\n#define KT_VEC4 float4\n#define LID", 1) + frag(metalTiles[dt]+metalFragments), nil
		case kernels.F16:
			return strings.Replace(metalCommon, "#define LID", "typedef half T;\n#define KT_VEC2 half2\n#define KT_VEC4 half4\n#define LID", 1) + frag(metalTiles[dt]+metalFragments), nil
		case kernels.BF16:
			return metalBF16 + frag(metalTiles[dt]+metalFragments), nil
		}
	case OpenCL:
		switch dt {
		case kernels.F32:
			return openclCommon + openclF32, nil
		case kernels.F16:
			return openclCommon + openclF16, nil
		case kernels.BF16:
			return openclCommon + openclBF16, nil
		}
	default:
		return "", fmt.Errorf("unknown API %q", api)
	}
	return "", fmt.Errorf("%s: dtype %q not supported", api, dt)
}
