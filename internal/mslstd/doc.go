// Package mslstd is the one declaration table of the Metal standard library
// (<metal_stdlib>) for compute kernels: vector types, math functions in
// metal, metal::fast and metal::precise, common, integer, relational,
// geometric, SIMD-group and quad-group functions, and atomics, with the
// overloads Metal declares (so that calls Metal finds ambiguous are
// ambiguous here too). Generate writes from it the clang check's stand-in
// headers (internal/mslcheck/shim) and the emulation's executable
// definitions (internal/mslemu/include), so that the two cannot drift.
package mslstd
