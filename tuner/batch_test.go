package tuner_test

import (
	"testing"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner"
	"github.com/kerntune/kerntune/tuner/cpu"
	"github.com/kerntune/kerntune/tuner/device"
)

// infoBackend is a backend known only by its description; prefetching
// makes it a Prefetcher.
type infoBackend struct {
	device.Backend
	info device.DeviceInfo
}

func (b infoBackend) Info() device.DeviceInfo { return b.info }

type prefetching struct{ infoBackend }

func (prefetching) Prefetch(*kernels.Kernel, kernels.DType, []search.Candidate) {}

// Batches only where compiles can run ahead on cores the device does not
// use: a GPU backend with a compile pool; not the CPU, not an OpenCL CPU
// device, not a backend without a pool.
func TestBatchFor(t *testing.T) {
	c, err := cpu.Open()
	if err != nil {
		t.Fatal(err)
	}
	if !c.Info().OnHostCPU {
		t.Error("the cpu backend does not say it runs on the host's cores")
	}
	for _, tc := range []struct {
		name string
		b    device.Backend
		want int
	}{
		{"cpu", c, 1},
		{"cuda with a compile pool", prefetching{infoBackend{info: device.DeviceInfo{Backend: "cuda"}}}, tuner.DefaultBatch},
		{"opencl on a GPU", prefetching{infoBackend{info: device.DeviceInfo{Backend: "opencl"}}}, tuner.DefaultBatch},
		{"opencl on the host's CPU", prefetching{infoBackend{info: device.DeviceInfo{Backend: "opencl", OnHostCPU: true}}}, 1},
		{"cuda without a pool", infoBackend{info: device.DeviceInfo{Backend: "cuda"}}, 1},
		{"cpu behind a prefetching worker", prefetching{infoBackend{info: c.Info()}}, 1},
	} {
		if got := tuner.BatchFor(tc.b); got != tc.want {
			t.Errorf("%s: batch %d, want %d", tc.name, got, tc.want)
		}
	}
}
