// Package mslemu runs Metal Shading Language kernels on the CPU, off a Mac:
// the generated source is compiled as C++20 by clang against an executable
// stand-in for <metal_stdlib> (include/metal_stdlib, whose vector types and
// library functions are generated from internal/mslstd's table, the one the
// clang check's headers come from) and launched on
// buffers as Metal would, threadgroup by threadgroup. Threads are fibers
// grouped into SIMD-groups of 32 lanes; threadgroup memory, barriers,
// SIMD-group shuffles and reductions and simdgroup_matrix loads, stores and
// multiplies (half and bfloat operands, float accumulators) follow Apple's
// documented semantics. Many kernels go into one program, built once and
// run on many launches. The tests of the packages that generate MSL
// (kernels/gpu, spec) use it to compare candidates with their references.
//
// It imports only the standard library and needs a C++20 clang at run time.
// It is a test harness for generated MSL, not a backend: nothing it measures
// is a timing.
package mslemu
