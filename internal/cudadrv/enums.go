package cudadrv

import "fmt"

// DeviceAttr is a CUdevice_attribute (cuda.h, enum CUdevice_attribute_enum).
type DeviceAttr int32

// Device attributes used by Props; pass any other CUdevice_attribute value
// to Lib.DeviceAttribute.
const (
	AttrMaxThreadsPerBlock          DeviceAttr = 1   // CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK
	AttrMaxBlockDimX                DeviceAttr = 2   // CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X
	AttrMaxBlockDimY                DeviceAttr = 3   // CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y
	AttrMaxBlockDimZ                DeviceAttr = 4   // CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z
	AttrMaxGridDimX                 DeviceAttr = 5   // CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X
	AttrMaxGridDimY                 DeviceAttr = 6   // CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y
	AttrMaxGridDimZ                 DeviceAttr = 7   // CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z
	AttrMaxSharedPerBlock           DeviceAttr = 8   // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK
	AttrTotalConstantMemory         DeviceAttr = 9   // CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY
	AttrWarpSize                    DeviceAttr = 10  // CU_DEVICE_ATTRIBUTE_WARP_SIZE
	AttrMaxRegistersPerBlock        DeviceAttr = 12  // CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK
	AttrClockRate                   DeviceAttr = 13  // CU_DEVICE_ATTRIBUTE_CLOCK_RATE (kHz)
	AttrMultiprocessorCount         DeviceAttr = 16  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
	AttrKernelExecTimeout           DeviceAttr = 17  // CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT
	AttrECCEnabled                  DeviceAttr = 32  // CU_DEVICE_ATTRIBUTE_ECC_ENABLED
	AttrPCIBusID                    DeviceAttr = 33  // CU_DEVICE_ATTRIBUTE_PCI_BUS_ID
	AttrMemoryClockRate             DeviceAttr = 36  // CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE (kHz)
	AttrGlobalMemoryBusWidth        DeviceAttr = 37  // CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH (bits)
	AttrL2CacheSize                 DeviceAttr = 38  // CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE (bytes)
	AttrMaxThreadsPerMultiprocessor DeviceAttr = 39  // CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR
	AttrComputeCapabilityMajor      DeviceAttr = 75  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
	AttrComputeCapabilityMinor      DeviceAttr = 76  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
	AttrMaxSharedPerMultiprocessor  DeviceAttr = 81  // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
	AttrMaxRegistersPerMultiproc    DeviceAttr = 82  // CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR
	AttrMaxSharedPerBlockOptin      DeviceAttr = 97  // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
	AttrMaxBlocksPerMultiprocessor  DeviceAttr = 106 // CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR
	AttrReservedSharedPerBlock      DeviceAttr = 111 // CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK
)

// FuncAttr is a CUfunction_attribute (cuda.h, enum CUfunction_attribute_enum).
type FuncAttr int32

// Function attributes.
const (
	FuncMaxThreadsPerBlock      FuncAttr = 0 // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
	FuncSharedSizeBytes         FuncAttr = 1 // CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES (static shared memory)
	FuncConstSizeBytes          FuncAttr = 2 // CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES
	FuncLocalSizeBytes          FuncAttr = 3 // CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES (per thread; >0 means spills or stack)
	FuncNumRegs                 FuncAttr = 4 // CU_FUNC_ATTRIBUTE_NUM_REGS
	FuncPTXVersion              FuncAttr = 5 // CU_FUNC_ATTRIBUTE_PTX_VERSION (major*10+minor)
	FuncBinaryVersion           FuncAttr = 6 // CU_FUNC_ATTRIBUTE_BINARY_VERSION (major*10+minor)
	FuncCacheModeCA             FuncAttr = 7 // CU_FUNC_ATTRIBUTE_CACHE_MODE_CA
	FuncMaxDynamicSharedBytes   FuncAttr = 8 // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (settable)
	FuncPreferredSharedCarveout FuncAttr = 9 // CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT (settable, percent)
)

var funcAttrNames = map[FuncAttr]string{
	FuncMaxThreadsPerBlock:      "MAX_THREADS_PER_BLOCK",
	FuncSharedSizeBytes:         "SHARED_SIZE_BYTES",
	FuncConstSizeBytes:          "CONST_SIZE_BYTES",
	FuncLocalSizeBytes:          "LOCAL_SIZE_BYTES",
	FuncNumRegs:                 "NUM_REGS",
	FuncPTXVersion:              "PTX_VERSION",
	FuncBinaryVersion:           "BINARY_VERSION",
	FuncCacheModeCA:             "CACHE_MODE_CA",
	FuncMaxDynamicSharedBytes:   "MAX_DYNAMIC_SHARED_SIZE_BYTES",
	FuncPreferredSharedCarveout: "PREFERRED_SHARED_MEMORY_CARVEOUT",
}

func (a FuncAttr) String() string {
	if n, ok := funcAttrNames[a]; ok {
		return "CU_FUNC_ATTRIBUTE_" + n
	}
	return fmt.Sprintf("CUfunction_attribute(%d)", int32(a))
}

// Flags and options of the driver API (cuda.h).
const (
	cuStreamDefault = 0 // CU_STREAM_DEFAULT: synchronizes with the legacy NULL stream
	cuEventDefault  = 0 // CU_EVENT_DEFAULT: timing enabled

	// CUjit_option values for cuModuleLoadDataEx.
	cuJitInfoLogBuffer           = 3 // CU_JIT_INFO_LOG_BUFFER
	cuJitInfoLogBufferSizeBytes  = 4 // CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES
	cuJitErrorLogBuffer          = 5 // CU_JIT_ERROR_LOG_BUFFER
	cuJitErrorLogBufferSizeBytes = 6 // CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
)

// DataType is a cudaDataType_t (library_types.h) as taken by cublasGemmEx.
type DataType int32

// Data types.
const (
	R32F  DataType = 0  // CUDA_R_32F
	R64F  DataType = 1  // CUDA_R_64F
	R16F  DataType = 2  // CUDA_R_16F
	R8I   DataType = 3  // CUDA_R_8I
	R32I  DataType = 10 // CUDA_R_32I
	R16BF DataType = 14 // CUDA_R_16BF
)

func (d DataType) String() string {
	switch d {
	case R32F:
		return "CUDA_R_32F"
	case R64F:
		return "CUDA_R_64F"
	case R16F:
		return "CUDA_R_16F"
	case R8I:
		return "CUDA_R_8I"
	case R32I:
		return "CUDA_R_32I"
	case R16BF:
		return "CUDA_R_16BF"
	}
	return fmt.Sprintf("cudaDataType(%d)", int32(d))
}

// Size is the element size in bytes (0 for an unknown type).
func (d DataType) Size() int {
	switch d {
	case R32F, R32I:
		return 4
	case R64F:
		return 8
	case R16F, R16BF:
		return 2
	case R8I:
		return 1
	}
	return 0
}

// cuBLAS enums (cublas_api.h).
const (
	cublasOpN            = 0  // CUBLAS_OP_N
	cublasOpT            = 1  // CUBLAS_OP_T
	cublasDefaultMath    = 0  // CUBLAS_DEFAULT_MATH (no TF32 for 32F compute)
	cublasCompute32F     = 68 // CUBLAS_COMPUTE_32F
	cublasGemmDefault    = -1 // CUBLAS_GEMM_DEFAULT (== CUBLAS_GEMM_DFALT)
	cublasStatusSuccess  = 0  // CUBLAS_STATUS_SUCCESS
	cublasStatusNotSupp  = 15 // CUBLAS_STATUS_NOT_SUPPORTED
	cublasPointerModeHst = 0  // CUBLAS_POINTER_MODE_HOST (the default; alpha/beta read from host memory at call time)
)

func cublasOp(trans bool) int32 {
	if trans {
		return cublasOpT
	}
	return cublasOpN
}
