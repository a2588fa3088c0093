package worker

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/device"
)

// ParseFaults parses a fault list: entries KIND:CANDIDATE_KEY separated by
// ";", e.g. "crash:BN=64,ROWS=1,THREADS=2,UNROLL=1;hang:BN=16,...".
func ParseFaults(spec string) (map[string]string, error) {
	faults := map[string]string{}
	for _, e := range strings.Split(spec, ";") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		kind, key, ok := strings.Cut(e, ":")
		if !ok || (kind != device.FaultCrash && kind != device.FaultHang) {
			return nil, fmt.Errorf("fault %q: want crash:KEY or hang:KEY", e)
		}
		c, err := search.ParseKey(key)
		if err != nil {
			return nil, fmt.Errorf("fault %q: %w", e, err)
		}
		faults[c.Key()] = kind
	}
	return faults, nil
}

// WithFaults wraps b so that the candidates in faults (key → kind) fault
// when they run. It exists to test crash isolation; kerntune's worker uses
// it only in test binaries and in builds with the ktfault tag.
func WithFaults(b device.Backend, faults map[string]string) device.Backend {
	return &faulty{Backend: b, faults: faults}
}

type faulty struct {
	device.Backend
	faults map[string]string
}

func (f *faulty) Build(k *kernels.Kernel, dt kernels.DType, c search.Candidate) (device.Program, error) {
	kind, ok := f.faults[c.Key()]
	if !ok {
		return f.Backend.Build(k, dt, c)
	}
	if fb, ok := f.Backend.(device.FaultBuilder); ok {
		return fb.BuildFault(k, dt, c, kind)
	}
	p, err := f.Backend.Build(k, dt, c)
	if err != nil {
		return nil, err
	}
	return &hostFault{Program: p, kind: kind}, nil
}

// Prefetch passes through so GPU compile pools keep working under faults.
func (f *faulty) Prefetch(k *kernels.Kernel, dt kernels.DType, cands []search.Candidate) {
	if pf, ok := f.Backend.(device.Prefetcher); ok {
		pf.Prefetch(k, dt, cands)
	}
}

// Spare passes through, as Prefetch does.
func (f *faulty) Spare(k *kernels.Kernel, dt kernels.DType, cands []search.Candidate) {
	if sp, ok := f.Backend.(device.Sparer); ok {
		sp.Spare(k, dt, cands)
	}
}

// Ready passes through, as Prefetch does.
func (f *faulty) BuildSeconds() float64 {
	if bt, ok := f.Backend.(device.BuildTimer); ok {
		return bt.BuildSeconds()
	}
	return 0
}

func (f *faulty) Ready(k *kernels.Kernel, dt kernels.DType, c search.Candidate) bool {
	rd, ok := f.Backend.(device.Readier)
	return ok && rd.Ready(k, dt, c)
}

// DeviceLost passes through to the wrapped backend.
func (f *faulty) DeviceLost(err error) bool {
	dl, ok := f.Backend.(device.DeviceLoser)
	return ok && dl.DeviceLost(err)
}

// hostFault faults on the host the way a pure-Go kernel does: a crash is
// an index out of range on one of the kernel's goroutines, which no recover
// can catch, and a hang is a loop that never ends.
type hostFault struct {
	device.Program
	kind string
}

func (h *hostFault) fault() {
	if h.kind == device.FaultHang {
		for {
			time.Sleep(time.Hour)
		}
	}
	go func() {
		out := make([]float32, 4)
		out[len(os.Args)+4] = 1
	}()
	for {
		time.Sleep(time.Hour)
	}
}

func (h *hostFault) Run(inst device.Instance, n int) ([]float64, error) {
	h.fault()
	return nil, nil
}

func (h *hostFault) Output(inst device.Instance) ([]float32, error) {
	h.fault()
	return nil, nil
}
