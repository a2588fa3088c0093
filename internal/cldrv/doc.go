// Package cldrv binds the OpenCL 1.2 host API of libOpenCL.so.1 (the ICD
// loader) through purego, without cgo: platforms and devices, contexts with
// one in-order profiling queue, buffers, programs built from source (the
// build log in the error), kernels, launches and event timestamps. Every
// cl_int status is checked; a failure is an *Error naming the call and the
// CL_... code.
//
// The library is loaded at run time through internal/dl, so binaries build
// with CGO_ENABLED=0; without a library, platform or device, Load returns an
// error wrapping ErrNoDriver. It imports nothing of kerntune's but
// internal/dl: it knows OpenCL, not kernels.
package cldrv
