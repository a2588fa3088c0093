// Package metal is kerntune's Apple GPU backend: the shared kernel bodies of
// package kernels/gpu generated as Metal Shading Language, compiled with
// newLibraryWithSource on a pool of goroutines, dispatched as MLX
// dispatches (many runs in one concurrent compute encoder, a buffer
// barrier between dependent ones, untracked buffers, several command
// buffers in flight) and timed with the command buffers' GPU timestamps
// (timing.go), and
// Metal Performance Shaders (MPSMatrixMultiplication,
// MPSMatrixVectorMultiplication) timed in the same harness as the baseline.
//
// It talks to Metal through the Objective-C runtime with
// github.com/ebitengine/purego and its objc package: no cgo, so the darwin
// binaries cross-compile from any platform with CGO_ENABLED=0. Files that
// need darwin APIs carry a darwin build tag; elsewhere Open reports
// device.ErrUnavailable. The decisions the darwin code takes (GPU family,
// feature gates, pipeline checks, timestamp validation, dispatches per
// command buffer, compile options, output preparation) and the timing
// path's encoding plan are in files without a build tag, unit-tested on
// every platform (the plan against a recording stand-in for Metal).
//
// See docs/guide/metal.md for running it on a Mac.
package metal
