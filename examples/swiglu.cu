// SwiGLU as a raw CUDA source: kerntune #defines the parameters (TG, EPT,
// VEC), NTHREADS and KT_F16 before this text. The signature lists the
// spec's buffers, then its scalars, in order.
#if KT_F16
// Half values as unsigned short, converted with PTX: no cuda_fp16.h include path needed.
typedef unsigned short elem;
__device__ __forceinline__ float ld(const elem* p, int i) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(p[i])); return f; }
__device__ __forceinline__ void st(elem* p, int i, float v) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v)); p[i] = h; }
#else
typedef float elem;
__device__ __forceinline__ float ld(const elem* p, int i) { return p[i]; }
__device__ __forceinline__ void st(elem* p, int i, float v) { p[i] = v; }
#endif

extern "C" __global__ void __launch_bounds__(NTHREADS)
kt_swiglu_raw(const elem* __restrict__ gate, const elem* __restrict__ up, elem* __restrict__ y, const int rows, const int cols) {
  const int total = rows * cols;
  const int base = blockIdx.x * (NTHREADS * EPT);
#pragma unroll
  for (int e = 0; e < EPT; ++e) {
    const int i = base + e * NTHREADS + threadIdx.x;
    if (i < total) {
      const float g = ld(gate, i);
      st(y, i, g / (1.0f + __expf(-g)) * ld(up, i));
    }
  }
}
