// Package mslstd is the one table of the Metal standard library functions
// that kerntune knows off a Mac (Apple's Metal Shading Language
// specification, chapter 6: math, common, integer, relational, geometric
// and SIMD-group functions), and the generator of the two headers made
// from it: the declarations the clang check parses against
// (internal/mslcheck/shim/metal_lib.h, which both stand-ins include) and the implementations the CPU
// emulation runs (internal/mslemu/include/metal_lib.h). Both come from
// Entries, so a function the check accepts is one the emulation computes;
// TestGeneratedFilesAreCurrent fails when a header differs from what the
// table gives (go test ./internal/mslstd -update rewrites them).
//
// It imports only the standard library and is used only by its tests and
// by whoever regenerates the headers.
package mslstd
