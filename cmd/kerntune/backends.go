package main

import (
	"github.com/spf13/cobra"

	"github.com/kerntune/kerntune/params"
	"github.com/kerntune/kerntune/tuner"
	_ "github.com/kerntune/kerntune/tuner/cpu" // the backends register themselves with the tuner when imported
	"github.com/kerntune/kerntune/tuner/cuda"
	"github.com/kerntune/kerntune/tuner/metal"
	_ "github.com/kerntune/kerntune/tuner/opencl"
)

// backendOptions are the flags that configure a backend as it opens
// (tune, verify, bench and the worker process take them).
type backendOptions struct {
	metalFastMath bool // --metal-fast-math
	allowTF32     bool // --allow-tf32
}

func addBackendFlags(cmd *cobra.Command, o *backendOptions) {
	cmd.Flags().BoolVar(&o.metalFastMath, "metal-fast-math", false,
		"metal: compile kernels with fast math (MTLCompileOptions.fastMathEnabled); off by default; tuned entries record it as fast_math")
	cmd.Flags().BoolVar(&o.allowTF32, "allow-tf32", false,
		"cuda: admit GEMM candidates with TF32=1 (f32 on the matrix units, inputs rounded to 10-bit mantissas; verified to 1e-3 instead of 1e-5); off by default")
}

// args are the flags that give a worker process the same options.
func (o backendOptions) args() []string {
	var a []string
	if o.metalFastMath {
		a = append(a, "--metal-fast-math")
	}
	if o.allowTF32 {
		a = append(a, "--allow-tf32")
	}
	return a
}

// openBackend opens the named backend with the options that apply to it.
func openBackend(name string, o backendOptions) (tuner.Backend, error) {
	switch name {
	case "metal":
		return metal.OpenWith(metal.Options{FastMath: o.metalFastMath})
	case "cuda":
		b, err := cuda.OpenWith(0, cuda.Options{AllowTF32: o.allowTF32})
		if err != nil {
			return nil, err
		}
		return b, nil
	}
	return tuner.Open(name)
}

// checkBackendOptions refuses options that the opened backend does not take.
func checkBackendOptions(b tuner.Backend, o backendOptions) error {
	name := b.Info().Backend
	if o.metalFastMath && name != "metal" {
		return usageErrorf("--metal-fast-math applies to the metal backend only; this run uses %s (name --backend metal on a Mac)", name)
	}
	if o.allowTF32 && name != "cuda" {
		return usageErrorf("--allow-tf32 applies to the cuda backend only; this run uses %s (Apple GPUs have no TF32 mode)", name)
	}
	return nil
}

// recordBackendOptions writes into a tuned entry the backend options its
// numbers depend on: for Metal, whether the kernels were compiled with
// fast math (the backend's fact fast_math, 0 or 1), as "fast_math".
func recordBackendOptions(info tuner.DeviceInfo, e *params.Entry) {
	if e == nil || info.Backend != "metal" {
		return
	}
	v, ok := info.Facts["fast_math"]
	if !ok {
		return
	}
	fast := v == 1
	e.FastMath = &fast
}
