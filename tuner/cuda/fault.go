package cuda

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kerntune/kerntune/internal/cudadrv"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/device"
)

var (
	_ device.DeviceLoser  = (*Backend)(nil)
	_ device.FaultBuilder = (*Backend)(nil)
)

// DeviceLost reports a sticky CUDA error (an illegal address, a trap): the
// context is corrupted for good, so the worker process must be replaced.
func (b *Backend) DeviceLost(err error) bool { return errors.Is(err, cudadrv.ErrContextLost) }

// BuildFault compiles candidate c with a fault at the top of its kernel:
// for device.FaultCrash a store to an unmapped address
// (CUDA_ERROR_ILLEGAL_ADDRESS, sticky), for device.FaultHang an endless
// loop. It shows on a real GPU that a faulting candidate is isolated.
func (b *Backend) BuildFault(k *kernels.Kernel, dt kernels.DType, c search.Candidate, kind string) (device.Program, error) {
	body, src, err := gpu.Source(k.Name, gpu.CUDA, dt, c)
	if err != nil {
		return nil, err
	}
	if src, err = injectFault(src, body.Func, kind); err != nil {
		return nil, err
	}
	img, log, err := b.lib.Compile(src, body.Func+".cu", b.nvrtcOptions())
	if err != nil {
		return nil, fmt.Errorf("NVRTC: %w\n%s", err, log)
	}
	return b.program(body, dt, c, img)
}

// injectFault inserts a faulting statement at the start of the kernel fn.
func injectFault(src, fn, kind string) (string, error) {
	var stmt string
	switch kind {
	case device.FaultCrash:
		stmt = "\n  if (threadIdx.x == 0 && blockIdx.x == 0) { *(volatile float*)16 = 1.0f; } // injected fault: illegal address\n"
	case device.FaultHang:
		// A loop around volatile asm: the compiler may delete an infinite
		// loop without side effects (C++ forward progress), even one over a
		// volatile local.
		stmt = "\n  for (;;) { asm volatile(\"nanosleep.u32 1000;\"); } // injected fault: never finishes\n"
	default:
		return "", fmt.Errorf("unknown fault %q", kind)
	}
	at := strings.Index(src, "__global__")
	for at >= 0 {
		open := strings.Index(src[at:], "{")
		if open < 0 {
			break
		}
		if strings.Contains(src[at:at+open], " "+fn+"(") {
			i := at + open + 1
			return src[:i] + stmt + src[i:], nil
		}
		next := strings.Index(src[at+1:], "__global__")
		if next < 0 {
			break
		}
		at += 1 + next
	}
	return "", fmt.Errorf("kernel %s not found in the generated source", fn)
}
