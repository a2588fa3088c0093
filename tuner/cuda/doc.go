// Package cuda is kerntune's NVIDIA backend: the shared kernel bodies of
// package kernels/gpu compiled with NVRTC for the device's own architecture,
// launched and timed with CUDA events through the driver API (purego, no
// cgo), and cuBLAS timed in the same harness as the baseline.
//
// The driver is loaded at run time (internal/cudadrv), so the package builds
// with CGO_ENABLED=0 everywhere; without a driver or a GPU, Open returns an
// error wrapping device.ErrUnavailable. Its host side is
// tuner/internal/gpuhost's.
package cuda
