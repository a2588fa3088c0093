package worker

import (
	"fmt"

	"github.com/kerntune/kerntune/internal/compilecache"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/tuner/device"
)

// Operations of the protocol.
const (
	opInfo      = "info"
	opLoad      = "load"
	opCloseInst = "close-instance"
	opBuild     = "build"
	opBaseline  = "baseline"
	opPrefetch  = "prefetch"
	opReady     = "ready"
	opRun       = "run"
	opOutput    = "output"
	opCloseProg = "close-program"
	opCache     = "cache-stats"
)

type request struct {
	Op      string
	Kernel  string
	DType   string
	Cand    map[string]int
	Cands   []map[string]int
	Problem *problemSpec
	Copies  int
	ID      int // instance or program
	Inst    int
	N       int
	// Sample, for an output request, asks for these rows of the output
	// only (device.SampledOutputer), with FirstBad and OutLen.
	Sample *kernels.RowSample
	// Spare marks a prefetch request as low priority (device.Sparer).
	Spare bool
	// Baseline marks a run or output of the baseline program; with
	// Kernel, DType and Cand it names the program in a crash report.
	Baseline bool
}

type response struct {
	Err string
	// Fatal: the error left the device unusable in the worker (a sticky
	// CUDA error), which exits after answering.
	Fatal bool
	Info  device.DeviceInfo
	ID    int
	Name  string
	Times []float64
	Out   []float32
	// FirstBad and OutLen answer an output request with a Sample: the
	// first non-finite element of the whole output (-1 for none) and its length.
	FirstBad int
	OutLen   int
	// Ready answers a ready request: the candidate's compile has ended
	// (device.Readier).
	Ready bool
	// Cache answers a cache-stats request (device.CacheReporter), with
	// BuildS, the backend's compile seconds (device.BuildTimer).
	Cache  compilecache.Stats
	BuildS float64
}

// problemSpec is a problem as sent to the worker: its seed, or for a
// problem not drawn from a seed, its inputs.
type problemSpec struct {
	Kernel  string
	DType   string
	Shape   []int
	Options []string
	Seed    uint64
	Seeded  bool
	Inputs  [][]float32
}

func specOf(p *kernels.Problem) *problemSpec {
	s := &problemSpec{Kernel: p.Kernel.Name, DType: string(p.DType), Shape: p.Case.Shape, Options: p.Case.Options, Seed: p.Seed, Seeded: p.Seeded}
	if !p.Seeded {
		s.Inputs = p.Inputs
	}
	return s
}

func (s *problemSpec) problem() (*kernels.Problem, error) {
	k, dt, err := kernelDType(s.Kernel, s.DType)
	if err != nil {
		return nil, err
	}
	c := kernels.Case{Shape: s.Shape, Options: s.Options}
	if s.Seeded {
		return kernels.NewSeededProblem(k, dt, c, s.Seed)
	}
	return &kernels.Problem{Kernel: k, DType: dt, Case: c, Inputs: s.Inputs}, nil
}

func kernelDType(name, dtype string) (*kernels.Kernel, kernels.DType, error) {
	k, err := kernels.Get(name)
	if err != nil {
		return nil, "", err
	}
	dt, err := kernels.ParseDType(dtype)
	if err != nil {
		return nil, "", fmt.Errorf("dtype: %w", err)
	}
	return k, dt, nil
}
