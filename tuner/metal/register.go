// Package metal is kerntune's Apple GPU backend: the shared kernel bodies of
// package kernels/gpu generated as Metal Shading Language, compiled with
// newLibraryWithSource on a pool of goroutines, dispatched many times per
// command buffer and timed with the command buffers' GPU timestamps, and
// Metal Performance Shaders (MPSMatrixMultiplication,
// MPSMatrixVectorMultiplication) timed in the same harness as the baseline.
//
// It talks to Metal through the Objective-C runtime with
// github.com/ebitengine/purego and its objc package: no cgo, so the darwin
// binaries cross-compile from any platform with CGO_ENABLED=0. Files that
// need darwin APIs carry a darwin build tag; elsewhere Open reports
// tuner.ErrUnavailable. The decisions the darwin code takes (GPU family,
// feature gates, pipeline checks, timestamp validation, dispatches per
// command buffer, compile options, output preparation) are pure functions
// in files without a build tag, unit-tested on every platform.
//
// See docs/metal.md for running it on a Mac.
package metal

import (
	"runtime"

	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/tuner"
)

func init() {
	tuner.RegisterOptions("metal", func(o tuner.Options) (tuner.Backend, error) {
		return OpenWith(Options{MathMode: o[OptionMathMode]})
	}, traits(runtime.GOOS))
}

// OptionMathMode is the tuner option that sets Options.MathMode.
const OptionMathMode = tuner.OptionMathMode

// traits: "--backend auto" tries Metal first, on macOS only (elsewhere it
// cannot open).
func traits(goos string) tuner.Traits {
	t := tuner.Traits{Space: tuner.SpaceGPU, API: gpu.Metal, Options: []string{OptionMathMode}, Isolate: true}
	if goos == "darwin" {
		t.AutoRank = 1
	}
	return t
}

// Options configure the backend. The zero value is the default.
type Options struct {
	// MathMode is the math mode every kernel is compiled with, as MLX's
	// metal_kernel compile_options math_mode names them: MathSafe (the
	// default, "" too: MLX's), MathRelaxed (macOS 15 and later) or
	// MathFast. It is set as MLX sets it on the running macOS
	// (setMathMode: from macOS 15, setFastMathEnabled: before), so that
	// kernels are timed with the arithmetic and the math functions the
	// application runs. The facts math_mode (MTLMathMode: 0, 1, 2) and
	// fast_math (0 or 1) record the choice.
	MathMode string
}

// Open opens the system's default Metal device with the default Options.
// See OpenWith.
func Open() (tuner.Backend, error) { return OpenWith(Options{}) }

// OpenWith opens the system's default Metal device, measures its facts
// (after at least a second of GPU warmup) and returns the backend. On a
// platform other than macOS, or without a Metal device, it returns an error
// wrapping tuner.ErrUnavailable.
func OpenWith(o Options) (tuner.Backend, error) { return open(o) }
