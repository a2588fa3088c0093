// Package worker runs a backend in a separate process so that a candidate
// that crashes (a segfault, an out-of-bounds access that poisons a CUDA
// context) or hangs takes down only that process. Backend implements
// device.Backend by calls to a child process (kerntune re-executed with a
// hidden subcommand that calls Serve) over its stdin and stdout, one gob
// message per call. When the child dies or a call runs past the time limit,
// the parent kills it and the call returns an error wrapping
// device.ErrCrashed or device.ErrTimeout; the next call starts a fresh child
// and loads into it again the problems and programs still in use.
//
// Inputs are not shipped over the pipe: a problem drawn with
// kernels.NewSeededProblem is sent as its seed and regenerated in the child.
//
// It imports tuner, kernels and search, no backend: the child opens its
// backend by name (kerntune worker) and hands it to Serve.
package worker
