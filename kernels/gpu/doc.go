// Package gpu holds the GPU kernel bodies of every family, written once in a
// small dialect, and generates from each body the CUDA C++, Metal Shading
// Language and OpenCL C source of one candidate: the tuning parameters as
// #defines, a per-API prelude, and a signature generated from the body's
// argument list, as MLX's fast.metal_kernel does for a body-only source. MSL
// (generated or raw) opens with #include <metal_stdlib> and using namespace
// metal, before any #define, so that no parameter macro reaches Apple's
// headers.
//
// # The dialect
//
// A body is the statements of a kernel function. It names its arguments as
// declared in Body.Args and may use, besides C:
//
//	T                       the element type of the T buffers (float, half or bf16 storage)
//	LOAD(p, i)              element i of a T buffer as a float
//	STORE(p, i, v)          store float v into element i of a T buffer
//	LOADV(p, i, dst)        VEC consecutive elements from i (aligned) into float dst[VEC]
//	STOREV(p, i, src)       float src[VEC] into VEC consecutive elements from i (aligned)
//	LOADV_STREAM, STOREV_STREAM  as LOADV and STOREV, for data the kernel reads or
//	                        writes once: evict-first where the API has cache hints
//	                        (CUDA ld/st.global.cs), plain elsewhere (Metal, OpenCL)
//	LID                     the thread's index in its threadgroup (1-D threadgroups)
//	GROUP_X, GROUP_Y        the threadgroup's position in the grid
//	NTHREADS                threads per threadgroup (a compile-time constant)
//	SHARED(type, name, n)   declare threadgroup memory
//	BARRIER()               threadgroup barrier for threadgroup memory
//	SEG_SUM(v, W, scratch)  sum of v over aligned segments of W threads (W a power of
//	SEG_MAX(v, W, scratch)  two ≤ NTHREADS); every thread of the group must call it;
//	                        scratch is a SHARED float array of NTHREADS elements
//	EXP, RSQRT, FMAX, FMA   float math
//	NEG_BIG                 a float below any input (−3e38)
//	UNROLL_LOOP             ask the compiler to unroll the next loop
//
// Every tuning parameter NAME of the candidate is #defined to its value.
//
// # Fragments
//
// Where a candidate has MMA=1 (and the API has matrix units, see Feature),
// the dialect adds matrix-unit fragments whose shape the API chooses
// (GemmFragment: 8×8×8 simdgroup_matrix on Metal, f32 accumulators fed
// from f32 tiles, f16 from half tiles, bf16 from bfloat tiles where MSL has
// bfloat and f32 ones otherwise; on CUDA 16×16 of mma.sync m16n8k16 for f16 and bf16 with
// f32 accumulation, or ×8 of m16n8k8 TF32),
// and copies from device into threadgroup memory that are asynchronous
// where the API has them (cp.async on CUDA):
//
//	FRAG_M, FRAG_N, FRAG_K    the fragment shape (#defined per API and dtype)
//	SPAD_A, SPAD_B            row padding of the A and B tiles, in elements
//	FRAG_A, FRAG_B, FRAG_C    fragment types: A (M×K), B (K×N), accumulator (M×N, f32)
//	FRAG_ZERO(c)              c = 0
//	FRAG_LOAD_A(a, p, ld)     A block from threadgroup memory, element (i, k) at p[i·ld + k]
//	FRAG_LOAD_AT(a, p, ld)    A block stored k-major, element (i, k) at p[k·ld + i]
//	FRAG_LOAD_B(b, p, ld)     B block, element (k, j) at p[k·ld + j]
//	FRAG_MMA(c, a, b)         c += a·b (every thread of the SIMD-group calls it)
//	FRAG_STORE(c, C, ldc, gi, gj, M, N, scratch)
//	                          c into rows gi.., columns gj.. of the T buffer C,
//	                          edges checked; scratch: FRAG_SCRATCH floats of the
//	                          SIMD-group's threadgroup memory (Metal uses it)
//	FRAG_STORE_TG(c, p, ld)   c into threadgroup floats, element (i, j) at p[i·ld + j]
//	SMEM_T                    element type of fragment tiles (T on CUDA; on Metal float,
//	                          half for f16, bfloat for bf16 where MSL has it)
//	SHARED_PTR(type)          pointer to threadgroup memory
//	SHARED_DYN(type, name, n) threadgroup array sized at launch on CUDA (past 48 KiB)
//	COPY_N                    elements per 16-byte copy
//	COPY_FULL(d, s, i)        COPY_N elements s[i..] to d (16-byte aligned, in bounds)
//	COPY_CHUNK(d, s, i, n)    the first n of them, the rest zero, any alignment
//	COPY_COMMIT(), COPY_WAIT(n)  close a group of copies; wait until at most
//	                          n groups are in flight (then BARRIER to share them)
//
// # bf16
//
// bf16 candidates store 16-bit bfloat16 values and compute in f32. CUDA
// holds them as unsigned short (no cuda_bf16.h: NVRTC needs no include
// path), widened by a shift and rounded by cvt.rn.bf16.f32, and multiplies
// fragments with mma.sync m16n8k16 .bf16 (sm_80+). Metal uses MSL's bfloat
// where the compiler defines __HAVE_BFLOAT__ (Metal 3.1, macOS 14) and
// ushort with f32 math otherwise, as MLX does; its fragments are bfloat
// with the first (simdgroup_bfloat8x8) and f32 with the second. OpenCL C has no bf16 type: ushort storage, f32 math.
//
// A body may instead be an MLX kernel (Body.MLX, mlx.go): a body written
// for MLX's mx.fast.metal_kernel, whose Metal source is generated by MLX's
// own rules, parameters passed as template arguments. CheckMSL is the
// clang syntax check of generated MSL off a Mac.
//
// # Contract
//
// A family has one body, shared by every API; what differs between the APIs
// is the prelude, the signature and the words for the limits (Limits). The
// package produces source text and constraints only: it compiles and
// launches nothing (the backends do) and imports kernels, search and
// internal/mslcheck (CheckMSL), no driver and no backend.
package gpu
