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
	t := tuner.Traits{API: gpu.Metal, Options: []string{OptionMathMode}, Isolate: true}
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
