package device

import (
	"fmt"

	"github.com/kerntune/kerntune/internal/compilecache"
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

// Sparer is a Prefetcher whose pool can also compile candidates at low
// priority: Spare replaces the list it compiles only when nothing
// announced waits, with some workers kept free for the next announcement
// (an empty list drops it). The search has them measured while a
// request's compile is not done, where the device would wait.
type Sparer interface {
	Spare(k *kernels.Kernel, dt kernels.DType, cands []search.Candidate)
}

// CacheReporter is a Backend with a compile cache: CacheStats counts what
// it loaded from the cache and what it compiled since it opened, so that an
// entry's time split can say how many of its kernels came from the cache.
type CacheReporter interface {
	CacheStats() compilecache.Stats
}

// BuildTimer is a Backend that compiles on a pool (Prefetcher):
// BuildSeconds is the time its compiles (and compile-cache loads) have
// taken since it opened, summed over the pool's goroutines.
type BuildTimer interface {
	BuildSeconds() float64
}

// Readier is implemented by backends with a compile pool (Prefetcher) that
// can say, cheaply and without waiting, whether a candidate's compile has
// ended, successfully or not: the search then measures the candidates of a
// batch whose builds are done before those still compiling
// (search.Readier).
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
