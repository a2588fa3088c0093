package cudadrv

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNoDriver reports that CUDA cannot be used on this machine at all:
// libcuda.so.1 is missing or lacks a required symbol, cuInit failed, or no
// device was found. Errors returned by Load wrap it (test with errors.Is);
// callers map it to "backend unavailable".
var ErrNoDriver = errors.New("cudadrv: CUDA driver or device not available")

// ErrClosed is returned by methods of a Context (or of its modules,
// functions and cuBLAS handle) after Context.Close.
var ErrClosed = errors.New("cudadrv: context is closed")

// ErrReentrant is returned when a marshalling method (one that runs its work
// on the context thread and waits for it) is called from the context thread
// itself, i.e. from inside a closure given to Do, TimeLaunches, TimeBatch or
// Time. Use the *Thread passed to the closure instead. Detection needs the
// OS thread id and works on Linux; elsewhere such a call deadlocks.
var ErrReentrant = errors.New("cudadrv: marshalling method called from the context thread (inside a Do/Time closure); use the *Thread methods instead")

// ErrContextLost is wrapped by every error returned after a sticky CUDA
// error (see Error.Sticky): the CUDA context is corrupted and the process
// must be restarted to use the device again.
var ErrContextLost = errors.New("cudadrv: CUDA context unusable after a sticky error")

// ErrUnavailable is wrapped when an optional library (NVRTC, cuBLAS) could
// not be loaded; the wrapped text says which paths were tried and why.
var ErrUnavailable = errors.New("cudadrv: library not available")

// Library names used in Error.Lib.
const (
	LibCUDA   = "cuda"
	LibNVRTC  = "nvrtc"
	LibCUBLAS = "cublas"
)

// Error is a failed call into the driver, NVRTC or cuBLAS.
type Error struct {
	Lib    string // LibCUDA, LibNVRTC or LibCUBLAS
	Call   string // the C function, e.g. "cuMemAlloc_v2"
	Code   int    // CUresult, nvrtcResult or cublasStatus_t
	Name   string // e.g. "CUDA_ERROR_OUT_OF_MEMORY"
	Msg    string // description from cuGetErrorString / nvrtcGetErrorString, may be empty
	Detail string // extra context added by this package (arguments, kernel name), may be empty
	Log    string // NVRTC program log or JIT error log, may be empty
	// Sticky reports a CUDA error that corrupts the context (illegal
	// address, device assert, ...): no further CUDA work can succeed in this
	// process.
	Sticky bool
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Call)
	if e.Detail != "" {
		b.WriteString(" (")
		b.WriteString(e.Detail)
		b.WriteString(")")
	}
	b.WriteString(": ")
	b.WriteString(e.Name)
	if e.Msg != "" && e.Msg != e.Name {
		b.WriteString(": ")
		b.WriteString(e.Msg)
	}
	if e.Sticky {
		b.WriteString(" [sticky error: the CUDA context is corrupted and unusable; every further call fails; restart the process to use the GPU again]")
	}
	if log := strings.TrimSpace(e.Log); log != "" {
		b.WriteString("\n")
		b.WriteString(log)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrContextLost) true for sticky errors.
func (e *Error) Is(target error) bool {
	return target == ErrContextLost && e.Sticky
}

// CUresult values this package refers to by name. The full set is in
// cudaError_enum in cuda.h; names at run time come from cuGetErrorName.
const (
	cudaSuccess                = 0
	cudaErrorInvalidValue      = 1
	cudaErrorOutOfMemory       = 2
	cudaErrorNotInitialized    = 3
	cudaErrorStubLibrary       = 34
	cudaErrorNoDevice          = 100
	cudaErrorInvalidDevice     = 101
	cudaErrorInvalidContext    = 201
	cudaErrorNotFound          = 500
	cudaErrorNotReady          = 600
	cudaErrorIllegalAddress    = 700
	cudaErrorLaunchOutOfRes    = 701
	cudaErrorLaunchTimeout     = 702
	cudaErrorAssert            = 710
	cudaErrorHardwareStack     = 714
	cudaErrorIllegalInstr      = 715
	cudaErrorMisalignedAddress = 716
	cudaErrorInvalidAddrSpace  = 717
	cudaErrorInvalidPC         = 718
	cudaErrorLaunchFailed      = 719
	cudaErrorUnknown           = 999
)

// cuResultNames is the fallback when cuGetErrorName cannot name a code
// (values from cudaError_enum, cuda.h).
var cuResultNames = map[int]string{
	0:   "CUDA_SUCCESS",
	1:   "CUDA_ERROR_INVALID_VALUE",
	2:   "CUDA_ERROR_OUT_OF_MEMORY",
	3:   "CUDA_ERROR_NOT_INITIALIZED",
	4:   "CUDA_ERROR_DEINITIALIZED",
	5:   "CUDA_ERROR_PROFILER_DISABLED",
	34:  "CUDA_ERROR_STUB_LIBRARY",
	46:  "CUDA_ERROR_DEVICE_UNAVAILABLE",
	100: "CUDA_ERROR_NO_DEVICE",
	101: "CUDA_ERROR_INVALID_DEVICE",
	102: "CUDA_ERROR_DEVICE_NOT_LICENSED",
	200: "CUDA_ERROR_INVALID_IMAGE",
	201: "CUDA_ERROR_INVALID_CONTEXT",
	202: "CUDA_ERROR_CONTEXT_ALREADY_CURRENT",
	205: "CUDA_ERROR_MAP_FAILED",
	206: "CUDA_ERROR_UNMAP_FAILED",
	207: "CUDA_ERROR_ARRAY_IS_MAPPED",
	208: "CUDA_ERROR_ALREADY_MAPPED",
	209: "CUDA_ERROR_NO_BINARY_FOR_GPU",
	210: "CUDA_ERROR_ALREADY_ACQUIRED",
	211: "CUDA_ERROR_NOT_MAPPED",
	212: "CUDA_ERROR_NOT_MAPPED_AS_ARRAY",
	213: "CUDA_ERROR_NOT_MAPPED_AS_POINTER",
	214: "CUDA_ERROR_ECC_UNCORRECTABLE",
	215: "CUDA_ERROR_UNSUPPORTED_LIMIT",
	216: "CUDA_ERROR_CONTEXT_ALREADY_IN_USE",
	217: "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED",
	218: "CUDA_ERROR_INVALID_PTX",
	219: "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT",
	220: "CUDA_ERROR_NVLINK_UNCORRECTABLE",
	221: "CUDA_ERROR_JIT_COMPILER_NOT_FOUND",
	222: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
	223: "CUDA_ERROR_JIT_COMPILATION_DISABLED",
	224: "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY",
	225: "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC",
	300: "CUDA_ERROR_INVALID_SOURCE",
	301: "CUDA_ERROR_FILE_NOT_FOUND",
	302: "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND",
	303: "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED",
	304: "CUDA_ERROR_OPERATING_SYSTEM",
	400: "CUDA_ERROR_INVALID_HANDLE",
	401: "CUDA_ERROR_ILLEGAL_STATE",
	500: "CUDA_ERROR_NOT_FOUND",
	600: "CUDA_ERROR_NOT_READY",
	700: "CUDA_ERROR_ILLEGAL_ADDRESS",
	701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
	702: "CUDA_ERROR_LAUNCH_TIMEOUT",
	703: "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING",
	704: "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED",
	705: "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED",
	708: "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE",
	709: "CUDA_ERROR_CONTEXT_IS_DESTROYED",
	710: "CUDA_ERROR_ASSERT",
	711: "CUDA_ERROR_TOO_MANY_PEERS",
	712: "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
	713: "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
	714: "CUDA_ERROR_HARDWARE_STACK_ERROR",
	715: "CUDA_ERROR_ILLEGAL_INSTRUCTION",
	716: "CUDA_ERROR_MISALIGNED_ADDRESS",
	717: "CUDA_ERROR_INVALID_ADDRESS_SPACE",
	718: "CUDA_ERROR_INVALID_PC",
	719: "CUDA_ERROR_LAUNCH_FAILED",
	720: "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
	800: "CUDA_ERROR_NOT_PERMITTED",
	801: "CUDA_ERROR_NOT_SUPPORTED",
	802: "CUDA_ERROR_SYSTEM_NOT_READY",
	803: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
	999: "CUDA_ERROR_UNKNOWN",
}

// IsSticky reports whether a CUresult corrupts the context: cuda.h documents
// these as "leaves the process in an inconsistent state and any further CUDA
// work will return the same error" (or, for CUDA_ERROR_ASSERT, "the context
// cannot be used anymore").
func IsSticky(code int) bool {
	switch code {
	case cudaErrorIllegalAddress, cudaErrorLaunchTimeout, cudaErrorAssert,
		cudaErrorHardwareStack, cudaErrorIllegalInstr, cudaErrorMisalignedAddress,
		cudaErrorInvalidAddrSpace, cudaErrorInvalidPC, cudaErrorLaunchFailed:
		return true
	}
	return false
}

// cuResultName is the fallback name of a CUresult.
func cuResultName(code int) string {
	if n, ok := cuResultNames[code]; ok {
		return n
	}
	return fmt.Sprintf("CUresult(%d)", code)
}

// nvrtcResult values (nvrtc.h, consecutive from 0).
var nvrtcResultNames = []string{
	"NVRTC_SUCCESS",
	"NVRTC_ERROR_OUT_OF_MEMORY",
	"NVRTC_ERROR_PROGRAM_CREATION_FAILURE",
	"NVRTC_ERROR_INVALID_INPUT",
	"NVRTC_ERROR_INVALID_PROGRAM",
	"NVRTC_ERROR_INVALID_OPTION",
	"NVRTC_ERROR_COMPILATION",
	"NVRTC_ERROR_BUILTIN_OPERATION_FAILURE",
	"NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION",
	"NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION",
	"NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID",
	"NVRTC_ERROR_INTERNAL_ERROR",
	"NVRTC_ERROR_TIME_FILE_WRITE_FAILED",
	"NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED",
	"NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED",
	"NVRTC_ERROR_PCH_CREATE",
	"NVRTC_ERROR_CANCELLED",
	"NVRTC_ERROR_TIME_TRACE_FILE_WRITE_FAILED",
	"NVRTC_ERROR_BUSY",
}

const nvrtcErrorCompilation = 6

func nvrtcResultName(code int) string {
	if code >= 0 && code < len(nvrtcResultNames) {
		return nvrtcResultNames[code]
	}
	return fmt.Sprintf("nvrtcResult(%d)", code)
}

// cublasStatus_t values (cublas_api.h).
var cublasStatusNames = map[int]string{
	0:  "CUBLAS_STATUS_SUCCESS",
	1:  "CUBLAS_STATUS_NOT_INITIALIZED",
	3:  "CUBLAS_STATUS_ALLOC_FAILED",
	7:  "CUBLAS_STATUS_INVALID_VALUE",
	8:  "CUBLAS_STATUS_ARCH_MISMATCH",
	11: "CUBLAS_STATUS_MAPPING_ERROR",
	13: "CUBLAS_STATUS_EXECUTION_FAILED",
	14: "CUBLAS_STATUS_INTERNAL_ERROR",
	15: "CUBLAS_STATUS_NOT_SUPPORTED",
	16: "CUBLAS_STATUS_LICENSE_ERROR",
}

// cublasStatusMsgs describes the statuses (after the cuBLAS documentation).
var cublasStatusMsgs = map[int]string{
	1:  "the cuBLAS library was not initialized",
	3:  "resource allocation failed inside cuBLAS",
	7:  "an unsupported value or parameter was passed",
	8:  "the function requires a feature absent from the device architecture",
	11: "an access to GPU memory space failed",
	13: "the GPU program failed to execute",
	14: "an internal cuBLAS operation failed",
	15: "the functionality requested is not supported",
	16: "the functionality requested requires a license",
}

func cublasStatusName(code int) string {
	if n, ok := cublasStatusNames[code]; ok {
		return n
	}
	return fmt.Sprintf("cublasStatus_t(%d)", code)
}

func newCUBLASError(call string, code int32, detail string) *Error {
	return &Error{Lib: LibCUBLAS, Call: call, Code: int(code), Name: cublasStatusName(int(code)),
		Msg: cublasStatusMsgs[int(code)], Detail: detail}
}

// unavailable builds the error for a missing optional library.
func unavailable(what string, cause error) error {
	if cause == nil {
		return fmt.Errorf("%w: %s", ErrUnavailable, what)
	}
	return fmt.Errorf("%w: %s: %v", ErrUnavailable, what, cause)
}
