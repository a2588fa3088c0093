package device

import (
	"errors"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
)

// ErrCrashed and ErrTimeout are wrapped by backends that run candidates in
// an isolated worker process (package tuner/worker) when a candidate killed
// the worker or ran past the time limit; the tuner records the candidate as
// crashed or timeout and goes on with a fresh worker.
var (
	ErrCrashed = errors.New("candidate crashed the worker process")
	ErrTimeout = errors.New("candidate exceeded the time limit")
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

// Fault kinds: the deliberately faulting candidates that show crash
// isolation (tuner/worker.WithFaults, FaultBuilder).
const (
	FaultCrash = "crash" // the candidate takes its process down
	FaultHang  = "hang"  // the candidate never finishes
)

// FaultBuilder is implemented by backends that can build a deliberately
// faulting candidate on their device (the CUDA backend: a kernel that
// writes to an illegal address, or spins forever), so crash isolation can
// be shown on real hardware.
type FaultBuilder interface {
	BuildFault(k *kernels.Kernel, dt kernels.DType, c search.Candidate, kind string) (Program, error)
}

// DeviceLoser is implemented by backends whose device can be left unusable
// by an error (CUDA's sticky errors); the worker then exits after answering,
// and the parent starts a fresh one.
type DeviceLoser interface {
	DeviceLost(err error) bool
}
