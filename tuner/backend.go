package tuner

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/search"
)

// DeviceInfo describes a device and the limits the tuner checks against.
type DeviceInfo struct {
	Key          string // stable key in hardware_params.json, e.g. "cpu:Intel Xeon:2"
	Name         string
	Backend      string // cpu, cuda, metal
	Family       string // fallback key shared by similar devices: amd64, sm_90, apple9
	ComputeUnits int
	// LLCBytes is the last-level cache size: memory-bound families rotate
	// input copies so the working set is at least twice this.
	LLCBytes int64
	// PeakFlops and PeakBandwidth (bytes/s) are generous physical ceilings:
	// a measurement implying more is rejected as a measurement error.
	PeakFlops     float64
	PeakBandwidth float64
	// Facts are measured or queried numbers recorded in the file (bandwidth_gbps, ...).
	Facts map[string]float64
	// Limits are the device's limits on candidates.
	Limits Limits
	// OnHostCPU is set when the device runs kernels on the host's own
	// cores (the cpu backend, an OpenCL CPU device such as PoCL): compiling
	// candidates ahead would compete with the timed runs for those cores,
	// so the tuner compiles each candidate only when it needs it.
	OnHostCPU bool
}

// Limits are a device's limits on candidates as plain data. The tuner
// turns them into the search space's constraints itself (Constraints), so
// a backend in a worker process sends them once, with its DeviceInfo,
// rather than answering a call for every check of every candidate.
type Limits struct {
	// Threads caps a CPU candidate's THREADS parameter (goroutines); 0: no cap.
	Threads int
	// GPU are a GPU's limits, checked by the family's GPU body; nil for the CPU.
	GPU *gpu.Limits
}

// Constraints hold family k's candidates in dt to the limits.
func (l Limits) Constraints(k *kernels.Kernel, dt kernels.DType) []search.Constraint {
	var cs []search.Constraint
	if n := l.Threads; n > 0 {
		cs = append(cs, search.Constraint{Name: fmt.Sprintf("THREADS ≤ %d", n), Check: func(c search.Candidate) error {
			if c["THREADS"] > n {
				return fmt.Errorf("THREADS=%d exceeds %d", c["THREADS"], n)
			}
			return nil
		}})
	}
	if l.GPU != nil {
		body, err := gpu.Get(k.Name)
		if err != nil {
			return append(cs, search.Constraint{Name: "has a GPU body", Check: func(search.Candidate) error { return err }})
		}
		cs = append(cs, body.Constraints(*l.GPU, dt)...)
	}
	return cs
}

// Backend runs kernels on one device.
type Backend interface {
	// Info describes the device, with its limits on candidates.
	Info() DeviceInfo
	// Load copies a problem's inputs to the device, in copies distinct
	// buffers that Run rotates through, and allocates the output.
	Load(p *kernels.Problem, copies int) (Instance, error)
	// Build compiles or instantiates one candidate.
	Build(k *kernels.Kernel, dt kernels.DType, c search.Candidate) (Program, error)
	// Baseline returns the vendor or library implementation timed for
	// comparison, with its name; nil when the backend has none for k and dt.
	Baseline(k *kernels.Kernel, dt kernels.DType) (Program, string, error)
	Close() error
}

// Prefetcher is implemented by backends that compile candidates ahead of
// use (GPU backends compile on a pool of goroutines while the device times
// others); the tuner announces each batch of candidates it will build.
type Prefetcher interface {
	Prefetch(k *kernels.Kernel, dt kernels.DType, cands []search.Candidate)
}

// Readier is implemented by backends with a compile pool (Prefetcher) that
// can say, cheaply and without waiting, whether a candidate's compile has
// ended, successfully or not: the search then measures the candidates of a
// batch whose builds are done before those still compiling
// (search.Driver.Ready).
type Readier interface {
	Ready(k *kernels.Kernel, dt kernels.DType, c search.Candidate) bool
}

// Instance is a problem loaded on the device.
type Instance interface {
	Close() error
}

// Program is a runnable kernel.
type Program interface {
	// Run launches the kernel n times on inst, rotating input copies, and
	// returns the duration of each run in seconds.
	Run(inst Instance, n int) ([]float64, error)
	// Output fills the output with NaN, runs the kernel once on the first
	// input copy and returns the output, for verification. A vendor
	// baseline whose library may read the output as an addend even with
	// beta = 0 (MPS) starts from zeros instead.
	Output(inst Instance) ([]float32, error)
	Close() error
}

// Opener creates a backend; it returns an error wrapping ErrUnavailable when
// the device or its driver is missing.
type Opener func() (Backend, error)

// ErrUnavailable reports that a backend cannot run on this machine.
var ErrUnavailable = fmt.Errorf("backend not available on this machine")

// ErrUnknownBackend reports a backend name that is not registered.
var ErrUnknownBackend = errors.New("unknown backend")

// Space kinds: the GPU backends share kernel bodies and so parameters.
const (
	SpaceCPU = "cpu"
	SpaceGPU = "gpu"
)

// Traits are what the layers above a backend know of it without opening
// it, so that no layer keeps its own list of backend names.
type Traits struct {
	// Space is the kind of parameter space its candidates use (SpaceCPU,
	// SpaceGPU). params.SpaceKind, which imports only the standard
	// library, keeps the same table; a test holds the two together.
	Space string
	// Isolate: tune runs its candidates in a worker process unless told
	// otherwise (one faulting GPU kernel can poison a context for good).
	Isolate bool
	// AutoRank orders the backends that "--backend auto" tries, lowest
	// first; 0: auto never picks it.
	AutoRank int
}

type registration struct {
	open   Opener
	traits Traits
}

var (
	registryMu sync.Mutex
	registry   = map[string]registration{}
)

// Register makes a backend available by name; backends call it from init.
func Register(name string, open Opener, t Traits) {
	registryMu.Lock()
	defer registryMu.Unlock()
	registry[name] = registration{open: open, traits: t}
}

func lookup(name string) (registration, error) {
	registryMu.Lock()
	r, ok := registry[name]
	registryMu.Unlock()
	if !ok {
		return r, fmt.Errorf("%w %q (built in: %s)", ErrUnknownBackend, name, strings.Join(Backends(), ", "))
	}
	return r, nil
}

// Open opens the named backend; an unregistered name gives an error
// wrapping ErrUnknownBackend.
func Open(name string) (Backend, error) {
	r, err := lookup(name)
	if err != nil {
		return nil, err
	}
	return r.open()
}

// TraitsOf returns the named backend's traits; an unregistered name gives
// an error wrapping ErrUnknownBackend.
func TraitsOf(name string) (Traits, error) {
	r, err := lookup(name)
	return r.traits, err
}

// Backends lists the registered backend names.
func Backends() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	var names []string
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// AutoOrder lists the backends "--backend auto" tries, in order of
// AutoRank; with a space kind, only those of that kind ("" for all).
func AutoOrder(space string) []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	var names []string
	for n, r := range registry {
		if r.traits.AutoRank > 0 && (space == "" || r.traits.Space == space) {
			names = append(names, n)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		ri, rj := registry[names[i]].traits.AutoRank, registry[names[j]].traits.AutoRank
		if ri != rj {
			return ri < rj
		}
		return names[i] < names[j]
	})
	return names
}

// PeakGFLOPS is the arithmetic peak, in GFLOP/s, of the units a candidate
// of dtype runs on, from the device's facts; 0 when the backend does not
// know it. A candidate with MMA=1 runs on the matrix units: their peak is
// peak_mma_<f16|tf32|f32>_gflops (f32 with TF32=1 is tf32, bf16 is f16), several times
// the SIMT peak_gflops on NVIDIA GPUs, which would make a compute floor no
// floor (456 % of it for an H100's tensor-core GEMM). Apple GPUs run
// simdgroup_matrix on the SIMD lanes, so Metal's MMA=1 peak is its
// peak_gflops. Elsewhere an MMA=1 candidate without a matrix-unit peak gets
// none, rather than the wrong units'.
func PeakGFLOPS(info DeviceInfo, dt kernels.DType, cand map[string]int) float64 {
	if cand["MMA"] != 1 {
		return info.Facts["peak_gflops"]
	}
	kind := string(dt)
	switch {
	case dt == kernels.F32 && cand["TF32"] == 1:
		kind = "tf32"
	case dt == kernels.BF16:
		// NVIDIA's tensor cores (sm_80 and later, where bf16 mma.sync
		// exists) multiply bf16 at the f16 rate.
		kind = "f16"
	}
	if p := info.Facts["peak_mma_"+kind+"_gflops"]; p > 0 {
		return p
	}
	if info.Backend == "metal" {
		return info.Facts["peak_gflops"]
	}
	return 0
}
