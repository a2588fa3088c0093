// Package mslcheck checks Metal Shading Language source off a Mac, where
// there is no Metal compiler: clang parses the source against a stand-in
// <metal_stdlib> (shim/), in one of two modes. Syntax parses it as C++17
// with the address spaces erased. AddressSpaces parses it as C++ for OpenCL
// with device, threadgroup, constant and thread mapped to __global,
// __local, __constant and __private, so that memory of one address space
// passed where another is expected is a type error, as it is for Apple's
// compiler. Many candidates go into one clang run. Both modes define
// __METAL_VERSION__ (and __HAVE_BFLOAT__ from 3.1) for the checker's Metal
// language version, and both put every source through Lint, which reports
// what Metal rejects and clang, parsing C++, cannot see: pointers without
// an address space, double, recursion, unknown attributes, buffer indices
// above 30 or repeated, program-scope variables outside constant. Where
// Apple's compiler answers through xcrun (FindXcrun), Apple compiles the
// sources instead. The tests of the packages that generate MSL
// (kernels/gpu, spec, tuner/metal) use it, and so does kerntune check.
//
// It imports only the standard library and needs clang at run time
// (FindClang; Require skips a test without it, or fails it when
// KTDEV_REQUIRE_CLANG is set). It checks; it never runs a kernel (that is
// internal/mslemu).
package mslcheck
