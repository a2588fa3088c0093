// Package cudadrv is a small, cgo-free binding to the CUDA driver API
// (libcuda.so.1), NVRTC and cuBLAS, loaded at run time with
// github.com/ebitengine/purego. Every binary that uses it still builds with
// CGO_ENABLED=0; on a machine without the driver, Load returns an error
// wrapping ErrNoDriver and callers report the backend as unavailable.
//
// # Threads
//
// A CUDA context is current per OS thread. A Context therefore owns one
// goroutine locked to its OS thread (internal/osthread) on which every
// driver and cuBLAS call for that context runs. The public methods of
// Context, Module, Function and Blas marshal a closure to that goroutine and
// wait for it, so they may be called from any goroutine.
//
// Work that must run as one unit on the context thread (timing loops, many
// launches in a row) is written as a closure taking a *Thread and passed to
// Context.Do, Context.TimeLaunches, Context.TimeBatch or Context.Time. The
// *Thread methods run directly, without marshalling; they are only valid
// inside such a closure. Calling a marshalling method (Context.Alloc,
// Function.Attr, Blas.GemmEx, ...) from inside a closure would wait for the
// very goroutine that is running it; on Linux this is detected (the OS
// thread id is compared) and ErrReentrant is returned instead of
// deadlocking.
//
// # Errors
//
// Every return code is checked. Driver errors read
// "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY: out of memory"; NVRTC errors
// carry the program log; cuBLAS errors name the status
// (CUBLAS_STATUS_NOT_SUPPORTED, ...). All are *Error values. A sticky error
// (CUDA_ERROR_ILLEGAL_ADDRESS after a faulting kernel, a device-side assert,
// ...) leaves the CUDA context unusable; it is reported as such and every
// later call on that Context returns it again (ErrContextLost).
//
// # Compilation
//
// Lib.Compile runs NVRTC. It needs no context and may be called from many
// goroutines at once. With --gpu-architecture=sm_XX it returns a CUBIN,
// with compute_XX (or no architecture) a NUL-terminated PTX image; both load
// with Context.LoadModule.
//
// # Libraries
//
// libcuda.so.1 is required; NVRTC (libnvrtc.so.13, .12, unversioned) and
// cuBLAS (libcublas.so.13, .12, unversioned) are optional. Each name is
// tried bare first (LD_LIBRARY_PATH, the ld.so cache), then in $CUDA_HOME,
// $CUDA_PATH, $CUDA_ROOT, the $LD_LIBRARY_PATH entries, /usr/local/cuda
// (lib64 and targets/<triple>/lib), /usr/local/cuda-X.Y (newest first),
// /usr/local/nvidia/lib64 and the system library directories. LoadWith
// takes explicit paths.
//
// # Testing
//
// The unit tests run anywhere. The TestFake* tests compile
// testdata/fakecuda.c with the system C compiler into a shared library
// exporting the driver, NVRTC and cuBLAS symbols with their C signatures,
// and exercise every binding through purego without a GPU (they skip when
// no compiler is found). TestSmoke and TestSmokeSticky need a GPU and skip
// when Load returns ErrNoDriver; on a GPU machine:
//
//	CGO_ENABLED=0 go test -c -o cudadrv.test ./internal/cudadrv
//	CUDADRV_REQUIRE_GPU=1 ./cudadrv.test -test.v -test.run Smoke
package cudadrv
