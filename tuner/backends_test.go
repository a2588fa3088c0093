package tuner_test

// The backends register themselves when imported; the tests of this package
// that name backends (spec kernels' backends, traits) see all of them.
import (
	_ "github.com/kerntune/kerntune/tuner/cpu"
	_ "github.com/kerntune/kerntune/tuner/cuda"
	_ "github.com/kerntune/kerntune/tuner/metal"
	_ "github.com/kerntune/kerntune/tuner/opencl"
)
