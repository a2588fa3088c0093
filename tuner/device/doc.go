// Package device is the contract between the tuner and the backends that
// run kernels: Backend, Instance and Program, a device's description and
// limits (DeviceInfo, Limits), the optional abilities a backend may have
// (Prefetcher, Readier, CacheReporter, SampledOutputer), the registry that
// backends join from init (Register, RegisterOptions, Traits) and the
// errors a backend wraps (ErrUnavailable, ErrCrashed, ErrTimeout).
//
// It is a leaf of the tuner: every backend (tuner/cpu, tuner/cuda,
// tuner/metal, tuner/opencl, the worker process's tuner/worker) and the
// engine (package tuner) import it, and it imports neither, so a backend
// never sees the engine and the engine names no backend.
package device
