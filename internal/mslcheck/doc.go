// Package mslcheck checks Metal Shading Language source off a Mac, where
// there is no Metal compiler: clang parses the source against a stand-in
// <metal_stdlib> (shim/), in one of two modes. Syntax parses it as C++17
// with the address spaces erased. AddressSpaces parses it as C++ for OpenCL
// with device, threadgroup, constant and thread mapped to __global,
// __local, __constant and __private, so that memory of one address space
// passed where another is expected is a type error, as it is for Apple's
// compiler. Many candidates go into one clang run. The tests of the
// packages that generate MSL (kernels/gpu, spec, tuner/metal) use it.
//
// It imports only the standard library and needs clang at run time
// (FindClang; Require skips a test without it, or fails it when
// KTDEV_REQUIRE_CLANG is set). It checks; it never runs a kernel (that is
// internal/mslemu).
package mslcheck
