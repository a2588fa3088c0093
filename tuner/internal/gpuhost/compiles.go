package gpuhost

import (
	"sync/atomic"
	"time"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/internal/compilepool"
)

// Key is the key of a candidate's compile job: family|dtype|candidate.
func Key(k *kernels.Kernel, dt kernels.DType, c search.Candidate) string {
	return k.Name + "|" + string(dt) + "|" + c.Key()
}

// Compiles are a backend's compile jobs on a compilepool.Pool, by Key; V
// is what one compile makes (a CUDA image, an OpenCL program, a Metal
// pipeline).
type Compiles[V any] struct {
	*compilepool.Pool[V]
	// Body looks up a family's kernel body: gpu.Get, or a test's.
	Body func(family string) (*gpu.Body, error)
	// Compile compiles one candidate of a body.
	Compile func(body *gpu.Body, dt kernels.DType, c search.Candidate) (V, error)
	// busy is the nanoseconds Compile has run, summed over the goroutines
	// that ran it.
	busy atomic.Int64
}

// NewCompiles makes the compile jobs of a backend on a pool of workers
// goroutines; closedErr ends the jobs not started when the pool closes.
func NewCompiles[V any](workers int, closedErr error, compile func(*gpu.Body, kernels.DType, search.Candidate) (V, error)) *Compiles[V] {
	return &Compiles[V]{Pool: compilepool.New[V](workers, closedErr), Body: gpu.Get, Compile: compile}
}

// For finds or creates the compile job of a candidate.
func (cs *Compiles[V]) For(body *gpu.Body, k *kernels.Kernel, dt kernels.DType, c search.Candidate) *compilepool.Job[V] {
	c = c.Clone()
	return cs.Job(Key(k, dt, c), func() (V, error) {
		t0 := time.Now()
		defer func() { cs.busy.Add(int64(time.Since(t0))) }()
		return cs.Compile(body, dt, c)
	})
}

// BuildSeconds is the time the compiles have taken since the pool was
// made, summed over the goroutines that ran them (device.BuildTimer):
// against the tuner's wait for builds it tells a compiler too slow for
// the device from compiles started too late.
func (cs *Compiles[V]) BuildSeconds() float64 { return time.Duration(cs.busy.Load()).Seconds() }

// Prefetch queues candidates the tuner will ask for soon: the pool
// compiles them in order while the device times others, and Build
// compiles a candidate itself if the pool has not reached it.
func (cs *Compiles[V]) Prefetch(k *kernels.Kernel, dt kernels.DType, cands []search.Candidate) {
	body, err := cs.Body(k.Name)
	if err != nil {
		return // Build reports it
	}
	cs.Enqueue(cs.jobs(body, k, dt, cands)...)
}

// Spare replaces the candidates the pool compiles when it has nothing
// announced to do (compilepool.Pool.Spare); none drops them.
func (cs *Compiles[V]) Spare(k *kernels.Kernel, dt kernels.DType, cands []search.Candidate) {
	body, err := cs.Body(k.Name)
	if err != nil {
		return
	}
	cs.Pool.Spare(cs.jobs(body, k, dt, cands)...)
}

func (cs *Compiles[V]) jobs(body *gpu.Body, k *kernels.Kernel, dt kernels.DType, cands []search.Candidate) []*compilepool.Job[V] {
	jobs := make([]*compilepool.Job[V], len(cands))
	for i, c := range cands {
		jobs[i] = cs.For(body, k, dt, c)
	}
	return jobs
}

// Ready reports whether a candidate's compile has ended, successfully or
// not, so that building it waits for no compile; false for a candidate
// never announced nor built (it creates no job).
func (cs *Compiles[V]) Ready(k *kernels.Kernel, dt kernels.DType, c search.Candidate) bool {
	j, ok := cs.Lookup(Key(k, dt, c))
	return ok && j.Done()
}
