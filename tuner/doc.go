// Package tuner runs the tuning pipeline on a Backend: for each kernel
// family and shape class it enumerates the valid candidates, builds each,
// verifies it against the float64 reference on fresh random inputs with the
// output poisoned, times it (warmup, many samples, median), lets a search
// strategy prune the losers, and records the winner with the un-tuned
// default and the backend's baseline as a paramfile.Entry.
//
// # Contract
//
// It imports no backend: each backend registers itself from its init
// (Register, with its Traits) and Open and AutoOrder find it by name. A
// candidate that fails verification never wins. Besides the standard
// library it imports params, kernels, kernels/gpu, search, report,
// internal/stats and internal/trace.
package tuner
