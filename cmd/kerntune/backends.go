package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/kerntune/kerntune/tuner"
	// The backends register themselves with the tuner when imported: a
	// new backend is one more line here.
	_ "github.com/kerntune/kerntune/tuner/cpu"
	"github.com/kerntune/kerntune/tuner/cuda"
	"github.com/kerntune/kerntune/tuner/metal"
	_ "github.com/kerntune/kerntune/tuner/opencl"
)

// backendOptions are the flags that configure a backend as it opens
// (tune, verify, bench and the worker process take them).
type backendOptions struct {
	metalFastMath bool   // --metal-fast-math: --metal-math-mode fast
	metalMathMode string // --metal-math-mode; "": the default, safe
	allowTF32     bool   // --allow-tf32
}

func addBackendFlags(cmd *cobra.Command, o *backendOptions) {
	addNoCacheFlag(cmd)
	cmd.Flags().StringVar(&o.metalMathMode, "metal-math-mode", "",
		"metal: compile kernels in this math mode, as MLX's compile_options name them: safe (the default, as MLX), relaxed (macOS 15 and later) or fast; set as MLX sets it on the running macOS; tuned entries record it as math_mode")
	cmd.Flags().BoolVar(&o.metalFastMath, "metal-fast-math", false,
		"metal: --metal-math-mode fast; tuned entries record it as fast_math")
	cmd.Flags().BoolVar(&o.allowTF32, "allow-tf32", false,
		"cuda: admit GEMM candidates with TF32=1 (f32 on the matrix units, inputs rounded to 10-bit mantissas; verified to 1e-3 instead of 1e-5); off by default")
}

// args are the flags that give a worker process the same options.
func (o backendOptions) args() []string {
	var a []string
	if o.metalFastMath {
		a = append(a, "--metal-fast-math")
	}
	if o.metalMathMode != "" {
		a = append(a, "--metal-math-mode", o.metalMathMode)
	}
	if o.allowTF32 {
		a = append(a, "--allow-tf32")
	}
	return a
}

// opened, when set, is told of each backend this process opens: tests
// count the opens of a parent and its workers with it.
var opened func(name string)

// openBackend opens the named backend with the options that apply to it.
func openBackend(name string, o backendOptions) (tuner.Backend, error) {
	b, err := openNamed(name, o)
	if err == nil && opened != nil {
		opened(name)
	}
	return b, err
}

func openNamed(name string, o backendOptions) (tuner.Backend, error) {
	opts, err := o.tunerOptions()
	if err != nil {
		return nil, err
	}
	return tuner.OpenWith(name, opts)
}

// tunerOptions are the flags as the backends' options; each backend takes
// those its traits name (tuner.OpenWith).
func (o backendOptions) tunerOptions() (tuner.Options, error) {
	mode, err := o.mathMode()
	if err != nil {
		return nil, err
	}
	opts := tuner.Options{}
	if mode != "" {
		opts[metal.OptionMathMode] = mode
	}
	if o.allowTF32 {
		opts[cuda.OptionAllowTF32] = "1"
	}
	return opts, nil
}

// mathMode is the Metal math mode the flags ask for: --metal-math-mode,
// or fast for --metal-fast-math; "" for the backend's default.
func (o backendOptions) mathMode() (string, error) {
	if _, ok := metal.MathModeValue(o.metalMathMode); o.metalMathMode != "" && !ok {
		return "", usageErrorf("--metal-math-mode %s: want safe, relaxed or fast", o.metalMathMode)
	}
	if !o.metalFastMath {
		return o.metalMathMode, nil
	}
	if o.metalMathMode != "" && o.metalMathMode != metal.MathFast {
		return "", usageErrorf("--metal-fast-math is --metal-math-mode fast, but --metal-math-mode is %s", o.metalMathMode)
	}
	return metal.MathFast, nil
}

// checkBackendOptions refuses options that the opened backend does not take.
func checkBackendOptions(b tuner.Backend, o backendOptions) error {
	name := b.Info().Backend
	t, _ := tuner.TraitsOf(name) // an unregistered name takes no options
	if o.metalFastMath && !t.Takes(metal.OptionMathMode) {
		return usageErrorf("--metal-fast-math applies to the metal backend only; this run uses %s (name --backend metal on a Mac)", name)
	}
	if o.metalMathMode != "" && !t.Takes(metal.OptionMathMode) {
		return usageErrorf("--metal-math-mode applies to the metal backend only; this run uses %s (name --backend metal on a Mac)", name)
	}
	if o.allowTF32 && !t.Takes(cuda.OptionAllowTF32) {
		return usageErrorf("--allow-tf32 applies to the cuda backend only; this run uses %s (Apple GPUs have no TF32 mode)", name)
	}
	return nil
}

// pickBackend resolves "auto" (tuner.AutoOrder: metal on macOS, else cuda
// where it opens, else cpu); it refuses options the backend it opened does
// not take. Why auto passed over a backend this machine lacks (no GPU, no
// driver) is logged only when verbose (kerntune devices says it too); a
// backend that is present but failed to open is always logged.
func pickBackend(name string, log io.Writer, verbose bool, o backendOptions) (tuner.Backend, error) {
	if _, err := o.mathMode(); err != nil {
		return nil, err
	}
	b, err := openPicked(name, log, verbose, o)
	if err != nil {
		return nil, err
	}
	if err := checkBackendOptions(b, o); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

func openPicked(name string, log io.Writer, verbose bool, o backendOptions) (tuner.Backend, error) {
	if name != "auto" {
		b, err := openBackend(name, o)
		if err != nil {
			return nil, usageError{fmt.Errorf("--backend %s: %w", name, err)}
		}
		return b, nil
	}
	b := tuner.OpenAuto("", func(n string) (tuner.Backend, error) { return openBackend(n, o) }, notUsed(log, verbose))
	if b == nil {
		return nil, usageErrorf("no backend could be opened")
	}
	return b, nil
}

// notUsed logs a backend that "--backend auto" passed over: always when
// it is present but failed to open, and when verbose also when this
// machine lacks it.
func notUsed(log io.Writer, verbose bool) func(name string, err error) {
	return func(name string, err error) {
		if verbose || !errors.Is(err, tuner.ErrUnavailable) {
			fmt.Fprintf(log, "backend %s not used: %v\n", name, err)
		}
	}
}
