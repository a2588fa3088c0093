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
#define SHARED(type, name, n) __shared__ type name[n]
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
#if MMA
// Metal's 8×8 SIMD-group matrix operations, emulated with the same
// semantics: lane l holds elements 2l and 2l+1 of the row-major 8×8 matrix
// (row l/4, columns 2(l%4) and 2(l%4)+1). Correct, not fast: CUDA runs this
// variant to verify the body's indexing, not to tune it.
struct kt_frag8 { float v[2]; };
#define MMA_T kt_frag8
#define MMA_ZERO(f) ((f).v[0] = 0.0f, (f).v[1] = 0.0f)
#define SIMD_BARRIER() __syncwarp()
KT_INLINE void kt_mma_load(kt_frag8& f, const float* p, int stride) {
  const int l = LID & 31;
  f.v[0] = p[(l >> 2) * stride + 2 * (l & 3)];
  f.v[1] = p[(l >> 2) * stride + 2 * (l & 3) + 1];
}
KT_INLINE void kt_mma_store(const kt_frag8& f, float* p, int stride) {
  const int l = LID & 31;
  p[(l >> 2) * stride + 2 * (l & 3)] = f.v[0];
  p[(l >> 2) * stride + 2 * (l & 3) + 1] = f.v[1];
}
// d += a·b: element (r, c) needs row r of a (lanes 4r..4r+3) and column c of
// b (lane 4k + c/2 for each k).
KT_INLINE void kt_mma_mac(kt_frag8& d, const kt_frag8& a, const kt_frag8& b) {
  const int l = LID & 31;
  float s0 = d.v[0], s1 = d.v[1];
  UNROLL_LOOP
  for (int k = 0; k < 8; ++k) {
    const float ak = __shfl_sync(0xffffffffu, a.v[k & 1], (l & ~3) | (k >> 1));
    const float b0 = __shfl_sync(0xffffffffu, b.v[0], 4 * k + (l & 3));
    const float b1 = __shfl_sync(0xffffffffu, b.v[1], 4 * k + (l & 3));
    s0 = fmaf(ak, b0, s0);
    s1 = fmaf(ak, b1, s1);
  }
  d.v[0] = s0; d.v[1] = s1;
}
#define MMA_LOAD(f, p, stride) kt_mma_load((f), (p), (stride))
#define MMA_STORE(f, p, stride) kt_mma_store((f), (p), (stride))
#define MMA_MAC(d, a, b) kt_mma_mac((d), (a), (b))
#endif
`

const cudaF32 = `typedef float T;
#define LOAD(p, i) ((float)(p)[i])
#define STORE(p, i, v) ((p)[i] = (v))
KT_INLINE void kt_loadv(const T* __restrict__ p, int i, float* d) {
#if VEC == 1
  d[0] = p[i];
#elif VEC == 2
  const float2 a = *reinterpret_cast<const float2*>(p + i);
  d[0] = a.x; d[1] = a.y;
#else
  UNROLL_LOOP
  for (int j = 0; j < VEC; j += 4) {
    const float4 a = *reinterpret_cast<const float4*>(p + i + j);
    d[j] = a.x; d[j + 1] = a.y; d[j + 2] = a.z; d[j + 3] = a.w;
  }
#endif
}
#define LOADV(p, i, d) kt_loadv((p), (i), (d))
KT_INLINE void kt_storev(T* __restrict__ p, int i, const float* d) {
#if VEC == 1
  p[i] = d[0];
#elif VEC == 2
  *reinterpret_cast<float2*>(p + i) = make_float2(d[0], d[1]);
#else
  UNROLL_LOOP
  for (int j = 0; j < VEC; j += 4) *reinterpret_cast<float4*>(p + i + j) = make_float4(d[j], d[j + 1], d[j + 2], d[j + 3]);
#endif
}
#define STOREV(p, i, d) kt_storev((p), (i), (d))
`

// f16 is stored as unsigned short and converted with PTX, so NVRTC needs no
// cuda_fp16.h include path.
const cudaF16 = `typedef unsigned short T;
KT_INLINE float kt_h2f(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
KT_INLINE unsigned short kt_f2h(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
#define LOAD(p, i) kt_h2f((p)[i])
#define STORE(p, i, v) ((p)[i] = kt_f2h(v))
KT_INLINE void kt_loadv(const T* __restrict__ p, int i, float* d) {
#if VEC == 1
  d[0] = kt_h2f(p[i]);
#elif VEC == 2
  const unsigned int a = *reinterpret_cast<const unsigned int*>(p + i);
  d[0] = kt_h2f((unsigned short)(a & 0xffffu)); d[1] = kt_h2f((unsigned short)(a >> 16));
#elif VEC == 4
  const uint2 a = *reinterpret_cast<const uint2*>(p + i);
  d[0] = kt_h2f((unsigned short)(a.x & 0xffffu)); d[1] = kt_h2f((unsigned short)(a.x >> 16));
  d[2] = kt_h2f((unsigned short)(a.y & 0xffffu)); d[3] = kt_h2f((unsigned short)(a.y >> 16));
#else
  const uint4 a = *reinterpret_cast<const uint4*>(p + i);
  const unsigned int w[4] = {a.x, a.y, a.z, a.w};
  UNROLL_LOOP
  for (int j = 0; j < 4; ++j) { d[2 * j] = kt_h2f((unsigned short)(w[j] & 0xffffu)); d[2 * j + 1] = kt_h2f((unsigned short)(w[j] >> 16)); }
#endif
}
#define LOADV(p, i, d) kt_loadv((p), (i), (d))
KT_INLINE unsigned int kt_pack2(float a, float b) { return (unsigned int)kt_f2h(a) | ((unsigned int)kt_f2h(b) << 16); }
KT_INLINE void kt_storev(T* __restrict__ p, int i, const float* d) {
#if VEC == 1
  p[i] = kt_f2h(d[0]);
#elif VEC == 2
  *reinterpret_cast<unsigned int*>(p + i) = kt_pack2(d[0], d[1]);
#elif VEC == 4
  *reinterpret_cast<uint2*>(p + i) = make_uint2(kt_pack2(d[0], d[1]), kt_pack2(d[2], d[3]));
#else
  *reinterpret_cast<uint4*>(p + i) = make_uint4(kt_pack2(d[0], d[1]), kt_pack2(d[2], d[3]), kt_pack2(d[4], d[5]), kt_pack2(d[6], d[7]));
#endif
}
#define STOREV(p, i, d) kt_storev((p), (i), (d))
`

// metalInclude opens every MSL source, generated or raw, before the
// parameter #defines.
const metalInclude = `#include <metal_stdlib>
using namespace metal;
`

const metalCommon = `#define LID ((int)kt_tid.x)
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
#if MMA
#define MMA_T simdgroup_float8x8
#define MMA_ZERO(f) ((f) = make_filled_simdgroup_matrix<float, 8, 8>(0.0f))
#define MMA_LOAD(f, p, stride) simdgroup_load((f), (p), (stride))
#define MMA_STORE(f, p, stride) simdgroup_store((f), (p), (stride))
#define MMA_MAC(d, a, b) simdgroup_multiply_accumulate((d), (a), (b), (d))
#define SIMD_BARRIER() simdgroup_barrier(mem_flags::mem_threadgroup)
#endif
#define LOAD(p, i) ((float)(p)[i])
#define STORE(p, i, v) ((p)[i] = (T)(v))
inline void kt_loadv(device const T* p, int i, thread float* d) {
#if VEC == 1
  d[0] = (float)p[i];
#elif VEC == 2
  const float2 a = float2(*((device const KT_VEC2*)(p + i)));
  d[0] = a.x; d[1] = a.y;
#else
  for (int j = 0; j < VEC; j += 4) {
    const float4 a = float4(*((device const KT_VEC4*)(p + i + j)));
    d[j] = a.x; d[j + 1] = a.y; d[j + 2] = a.z; d[j + 3] = a.w;
  }
#endif
}
#define LOADV(p, i, d) kt_loadv((p), (i), (d))
inline void kt_storev(device T* p, int i, thread const float* d) {
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

func prelude(api API, dt kernels.DType, vec int) (string, error) {
	if vec != 1 && vec != 2 && vec%4 != 0 {
		return "", fmt.Errorf("VEC=%d: vector loads take 1, 2 or a multiple of 4 elements", vec)
	}
	switch api {
	case CUDA:
		switch dt {
		case kernels.F32:
			return cudaCommon + cudaF32, nil
		case kernels.F16:
			return cudaCommon + cudaF16, nil
		}
	case Metal:
		switch dt {
		case kernels.F32:
			return strings.Replace(metalCommon, "#define LID", "typedef float T;\n#define KT_VEC2 float2\n#define KT_VEC4 float4\n#define LID", 1), nil
		case kernels.F16:
			return strings.Replace(metalCommon, "#define LID", "typedef half T;\n#define KT_VEC2 half2\n#define KT_VEC4 half4\n#define LID", 1), nil
		}
	case OpenCL:
		switch dt {
		case kernels.F32:
			return openclCommon + openclF32, nil
		case kernels.F16:
			return openclCommon + openclF16, nil
		}
	default:
		return "", fmt.Errorf("unknown API %q", api)
	}
	return "", fmt.Errorf("%s: dtype %q not supported", api, dt)
}
