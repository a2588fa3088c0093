package metal

import (
	"runtime"

	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/tuner/device"
)

func init() {
	device.RegisterOptions("metal", func(o device.Options) (device.Backend, error) {
		return OpenWith(Options{MathMode: o[OptionMathMode]})
	}, traits(runtime.GOOS))
}

// OptionMathMode is the tuner option that sets Options.MathMode.
const OptionMathMode = device.OptionMathMode

// traits: "--backend auto" tries Metal first, on macOS only (elsewhere it
// cannot open).
func traits(goos string) device.Traits {
	t := device.Traits{API: gpu.Metal, Options: []string{OptionMathMode}, Isolate: true, Flags: []device.Flag{
		{Name: "metal-math-mode", Option: OptionMathMode, Values: []string{MathSafe, MathRelaxed, MathFast}, Elsewhere: "name --backend metal on a Mac",
			Usage: "metal: compile kernels in this math mode, as MLX's compile_options name them: safe (the default, as MLX), relaxed (macOS 15 and later) or fast; set as MLX sets it on the running macOS; tuned entries record it as math_mode"},
		{Name: "metal-fast-math", Option: OptionMathMode, Set: MathFast, Elsewhere: "name --backend metal on a Mac",
			Usage: "metal: --metal-math-mode fast; tuned entries record it as fast_math"},
	}}
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
func Open() (device.Backend, error) { return OpenWith(Options{}) }

// OpenWith opens the system's default Metal device, measures its facts
// (after at least a second of GPU warmup) and returns the backend. On a
// platform other than macOS, or without a Metal device, it returns an error
// wrapping device.ErrUnavailable.
func OpenWith(o Options) (device.Backend, error) { return open(o) }
