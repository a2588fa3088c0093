// Package opencl is kerntune's OpenCL backend: the shared kernel bodies of
// package kernels/gpu generated as OpenCL C 1.2, built from source for the
// device, launched on one in-order queue and timed with the queue's
// profiling events (CL_PROFILING_COMMAND_START/END), through the ICD loader
// libOpenCL.so.1 (purego, no cgo). It runs on AMD and Intel GPUs and, with
// PoCL, on the CPU, which is how CI executes every GPU body. There is no
// vendor baseline.
//
// The library is loaded at run time (internal/cldrv), so the package builds
// with CGO_ENABLED=0; without a library, platform or device, Open returns
// an error wrapping device.ErrUnavailable. Its host side is tuner/internal/gpuhost's.
package opencl
