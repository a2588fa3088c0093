package tuner

import (
	"github.com/kerntune/kerntune/kernels"
)

// SampledOutputer is implemented by programs whose whole output is costly
// to bring to the tuner (one in a worker process crosses a pipe).
// OutputSample runs the kernel as Output does and returns only the rows of
// the sample (kernels.RowSample.Extract of the whole output), the index of
// the first element of the whole output that is not finite (-1 for none)
// and the output's length.
type SampledOutputer interface {
	OutputSample(inst Instance, s kernels.RowSample) (rows []float32, firstBad, outLen int, err error)
}
