// Package cover picks small, reproducible samples of a tuning space's valid
// candidates that still take every value of every parameter (strength 1)
// or every pair of values of two parameters (strength 2) that some valid
// candidate takes. The checks that cannot afford every candidate in
// `make test` (the MSL clang checks in kernels/gpu and spec, the OpenCL
// verification on PoCL in tuner/opencl) run such a sample there and every
// candidate in `make test-full`.
//
// A sample is reproducible for its seed and never misses a value (or pair)
// that some valid candidate takes; Missing checks that. It imports search
// (for its candidates) only.
package cover
