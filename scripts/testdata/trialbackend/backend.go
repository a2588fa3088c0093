// Package trial is a trial backend, added to a scratch copy of the tree by
// scripts/trial-backend.sh: it is named "trial", not after the API whose
// generated sources it builds (CUDA), generates each candidate's CUDA
// source as a CUDA backend would and, having no device, answers with the
// reference. It shows which files a backend that reuses a generated API
// needs.
package trial

import (
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/device"
)

func init() {
	device.RegisterOptions("trial", func(device.Options) (device.Backend, error) { return backend{}, nil },
		device.Traits{API: gpu.CUDA})
}

type backend struct{}

func (backend) Info() device.DeviceInfo {
	return device.DeviceInfo{Key: "trial:0", Name: "trial", Backend: "trial", Family: "trial", ComputeUnits: 1,
		PeakFlops: 1e15, PeakBandwidth: 1e13,
		Limits: device.Limits{GPU: &gpu.Limits{API: gpu.CUDA, MaxThreads: 1024, MaxShared: 48 << 10, SIMDWidth: 32}}}
}

type instance struct{ p *kernels.Problem }

func (instance) Close() error { return nil }

func (backend) Load(p *kernels.Problem, _ int) (device.Instance, error) { return instance{p}, nil }

// program holds the source generated for a candidate.
type program struct{ src string }

func (backend) Build(k *kernels.Kernel, dt kernels.DType, c search.Candidate) (device.Program, error) {
	_, src, err := gpu.Source(k.Name, gpu.CUDA, dt, c)
	if err != nil {
		return nil, err
	}
	return program{src}, nil
}

func (backend) Baseline(*kernels.Kernel, kernels.DType) (device.Program, string, error) {
	return nil, "", nil
}

func (backend) Close() error { return nil }

func (program) Run(_ device.Instance, n int) ([]float64, error) {
	ts := make([]float64, n)
	for i := range ts {
		ts[i] = 1e-3
	}
	return ts, nil
}

func (program) Output(inst device.Instance) ([]float32, error) {
	ref := inst.(instance).p.Reference()
	out := make([]float32, len(ref))
	for i, v := range ref {
		out[i] = float32(v)
	}
	return out, nil
}

func (program) Close() error { return nil }
