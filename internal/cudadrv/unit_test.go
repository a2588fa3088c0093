package cudadrv

import (
	"encoding/binary"
	"errors"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

func TestErrorFormat(t *testing.T) {
	e := &Error{Lib: LibCUDA, Call: "cuMemAlloc_v2", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY", Msg: "out of memory"}
	if got, want := e.Error(), "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY: out of memory"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	e.Detail = "1024 bytes"
	if got, want := e.Error(), "cuMemAlloc_v2 (1024 bytes): CUDA_ERROR_OUT_OF_MEMORY: out of memory"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if errors.Is(e, ErrContextLost) {
		t.Error("non-sticky error matches ErrContextLost")
	}

	s := &Error{Lib: LibCUDA, Call: "cuCtxSynchronize", Code: 700, Name: "CUDA_ERROR_ILLEGAL_ADDRESS",
		Msg: "an illegal memory access was encountered", Sticky: true}
	msg := s.Error()
	if !strings.HasPrefix(msg, "cuCtxSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered") ||
		!strings.Contains(msg, "sticky") || !strings.Contains(msg, "unusable") {
		t.Errorf("sticky message %q", msg)
	}
	if !errors.Is(s, ErrContextLost) {
		t.Error("sticky error does not match ErrContextLost")
	}

	n := &Error{Lib: LibNVRTC, Call: "nvrtcCompileProgram", Code: 6, Name: nvrtcResultName(6),
		Msg: "NVRTC_ERROR_COMPILATION", Detail: "k.cu", Log: "k.cu(3): error: identifier \"x\" is undefined\n"}
	if got, want := n.Error(), "nvrtcCompileProgram (k.cu): NVRTC_ERROR_COMPILATION\nk.cu(3): error: identifier \"x\" is undefined"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}

	b := newCUBLASError("cublasGemmEx", 15, "m=1")
	if got, want := b.Error(), "cublasGemmEx (m=1): CUBLAS_STATUS_NOT_SUPPORTED: the functionality requested is not supported"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if b.Lib != LibCUBLAS || b.Code != 15 {
		t.Errorf("cuBLAS error fields %+v", b)
	}
}

func TestResultNames(t *testing.T) {
	cases := []struct {
		got, want string
	}{
		{cuResultName(0), "CUDA_SUCCESS"},
		{cuResultName(2), "CUDA_ERROR_OUT_OF_MEMORY"},
		{cuResultName(201), "CUDA_ERROR_INVALID_CONTEXT"},
		{cuResultName(700), "CUDA_ERROR_ILLEGAL_ADDRESS"},
		{cuResultName(719), "CUDA_ERROR_LAUNCH_FAILED"},
		{cuResultName(12345), "CUresult(12345)"},
		{nvrtcResultName(0), "NVRTC_SUCCESS"},
		{nvrtcResultName(5), "NVRTC_ERROR_INVALID_OPTION"},
		{nvrtcResultName(6), "NVRTC_ERROR_COMPILATION"},
		{nvrtcResultName(11), "NVRTC_ERROR_INTERNAL_ERROR"},
		{nvrtcResultName(-1), "nvrtcResult(-1)"},
		{cublasStatusName(0), "CUBLAS_STATUS_SUCCESS"},
		{cublasStatusName(7), "CUBLAS_STATUS_INVALID_VALUE"},
		{cublasStatusName(13), "CUBLAS_STATUS_EXECUTION_FAILED"},
		{cublasStatusName(15), "CUBLAS_STATUS_NOT_SUPPORTED"},
		{cublasStatusName(99), "cublasStatus_t(99)"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	for _, code := range []int{700, 702, 710, 714, 715, 716, 717, 718, 719} {
		if !IsSticky(code) {
			t.Errorf("IsSticky(%d) = false", code)
		}
	}
	for _, code := range []int{0, 1, 2, 201, 218, 500, 701, 720, 999} {
		if IsSticky(code) {
			t.Errorf("IsSticky(%d) = true", code)
		}
	}
	// Without cuGetErrorName (not loaded) the fallback table names the code.
	e := (&Lib{}).cuError("cuMemAlloc_v2", 2, "")
	if e.Name != "CUDA_ERROR_OUT_OF_MEMORY" || e.Msg != "" || e.Sticky {
		t.Errorf("fallback error %+v", e)
	}
	if e := (&Lib{}).cuError("cuCtxSynchronize", 700, ""); !e.Sticky {
		t.Error("cuError(700) not sticky")
	}
}

func TestEnumValues(t *testing.T) {
	ints := []struct {
		name      string
		got, want int
	}{
		// CUdevice_attribute (cuda.h)
		{"MAX_THREADS_PER_BLOCK", int(AttrMaxThreadsPerBlock), 1},
		{"MAX_SHARED_MEMORY_PER_BLOCK", int(AttrMaxSharedPerBlock), 8},
		{"WARP_SIZE", int(AttrWarpSize), 10},
		{"MAX_REGISTERS_PER_BLOCK", int(AttrMaxRegistersPerBlock), 12},
		{"CLOCK_RATE", int(AttrClockRate), 13},
		{"MULTIPROCESSOR_COUNT", int(AttrMultiprocessorCount), 16},
		{"MEMORY_CLOCK_RATE", int(AttrMemoryClockRate), 36},
		{"GLOBAL_MEMORY_BUS_WIDTH", int(AttrGlobalMemoryBusWidth), 37},
		{"L2_CACHE_SIZE", int(AttrL2CacheSize), 38},
		{"MAX_THREADS_PER_MULTIPROCESSOR", int(AttrMaxThreadsPerMultiprocessor), 39},
		{"COMPUTE_CAPABILITY_MAJOR", int(AttrComputeCapabilityMajor), 75},
		{"COMPUTE_CAPABILITY_MINOR", int(AttrComputeCapabilityMinor), 76},
		{"MAX_SHARED_MEMORY_PER_MULTIPROCESSOR", int(AttrMaxSharedPerMultiprocessor), 81},
		{"MAX_REGISTERS_PER_MULTIPROCESSOR", int(AttrMaxRegistersPerMultiproc), 82},
		{"MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", int(AttrMaxSharedPerBlockOptin), 97},
		{"MAX_BLOCKS_PER_MULTIPROCESSOR", int(AttrMaxBlocksPerMultiprocessor), 106},
		{"RESERVED_SHARED_MEMORY_PER_BLOCK", int(AttrReservedSharedPerBlock), 111},
		// CUfunction_attribute
		{"FUNC_MAX_THREADS_PER_BLOCK", int(FuncMaxThreadsPerBlock), 0},
		{"FUNC_SHARED_SIZE_BYTES", int(FuncSharedSizeBytes), 1},
		{"FUNC_LOCAL_SIZE_BYTES", int(FuncLocalSizeBytes), 3},
		{"FUNC_NUM_REGS", int(FuncNumRegs), 4},
		{"FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES", int(FuncMaxDynamicSharedBytes), 8},
		{"FUNC_PREFERRED_SHARED_MEMORY_CARVEOUT", int(FuncPreferredSharedCarveout), 9},
		// CUjit_option
		{"CU_JIT_INFO_LOG_BUFFER", cuJitInfoLogBuffer, 3},
		{"CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES", cuJitInfoLogBufferSizeBytes, 4},
		{"CU_JIT_ERROR_LOG_BUFFER", cuJitErrorLogBuffer, 5},
		{"CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES", cuJitErrorLogBufferSizeBytes, 6},
		{"CU_STREAM_DEFAULT", cuStreamDefault, 0},
		{"CU_EVENT_DEFAULT", cuEventDefault, 0},
		// cudaDataType_t
		{"CUDA_R_32F", int(R32F), 0},
		{"CUDA_R_64F", int(R64F), 1},
		{"CUDA_R_16F", int(R16F), 2},
		{"CUDA_R_8I", int(R8I), 3},
		{"CUDA_R_32I", int(R32I), 10},
		{"CUDA_R_16BF", int(R16BF), 14},
		// cuBLAS
		{"CUBLAS_OP_N", cublasOpN, 0},
		{"CUBLAS_OP_T", cublasOpT, 1},
		{"CUBLAS_DEFAULT_MATH", cublasDefaultMath, 0},
		{"CUBLAS_COMPUTE_32F", cublasCompute32F, 68},
		{"CUBLAS_GEMM_DEFAULT", cublasGemmDefault, -1},
		{"CUBLAS_STATUS_NOT_SUPPORTED", cublasStatusNotSupp, 15},
	}
	for _, c := range ints {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	if cublasOp(false) != 0 || cublasOp(true) != 1 {
		t.Error("cublasOp")
	}
	for d, size := range map[DataType]int{R32F: 4, R16F: 2, R16BF: 2, R64F: 8, R8I: 1, R32I: 4, DataType(99): 0} {
		if d.Size() != size {
			t.Errorf("%v.Size() = %d, want %d", d, d.Size(), size)
		}
	}
	if R16F.String() != "CUDA_R_16F" || DataType(99).String() != "cudaDataType(99)" {
		t.Error("DataType.String")
	}
	if FuncNumRegs.String() != "CU_FUNC_ATTRIBUTE_NUM_REGS" || FuncAttr(42).String() != "CUfunction_attribute(42)" {
		t.Error("FuncAttr.String")
	}
}

func TestPackArgs(t *testing.T) {
	raw := RawArg{1, 2, 3, 4, 5}
	p, err := PackArgs(DevPtr(0x7f0012345600), int32(-5), uint32(0xdeadbeef), int64(-9), uint64(1<<40),
		float32(1.5), float64(-2.25), int8(-3), uint8(250), int16(-300), uint16(60000), raw)
	if err != nil {
		t.Fatal(err)
	}
	raw[0] = 99 // packing copied the bytes
	le := binary.LittleEndian
	u16 := func(v uint16) []byte { return le.AppendUint16(nil, v) }
	u32 := func(v uint32) []byte { return le.AppendUint32(nil, v) }
	u64 := func(v uint64) []byte { return le.AppendUint64(nil, v) }
	m5, m9 := int32(-5), int64(-9)
	m300 := int16(-300)
	want := [][]byte{
		u64(0x7f0012345600),
		u32(uint32(m5)),
		u32(0xdeadbeef),
		u64(uint64(m9)),
		u64(1 << 40),
		u32(math.Float32bits(1.5)),
		u64(math.Float64bits(-2.25)),
		{0xfd},
		{250},
		u16(uint16(m300)),
		u16(60000),
		{1, 2, 3, 4, 5},
	}
	if p.Len() != len(want) {
		t.Fatalf("Len = %d, want %d", p.Len(), len(want))
	}
	// Read the values back through the void** array exactly as the driver
	// does: params[i] points at the value, Size(i) bytes long.
	params := unsafe.Slice(p.kernelParams(), p.Len())
	for i, w := range want {
		if p.Size(i) != len(w) {
			t.Errorf("arg %d: size %d, want %d", i, p.Size(i), len(w))
		}
		got := unsafe.Slice((*byte)(params[i]), len(w))
		if !reflect.DeepEqual([]byte(got), w) {
			t.Errorf("arg %d (%v): bytes %v, want %v", i, p.types[i], got, w)
		}
		if !reflect.DeepEqual(p.Bytes(i), w) {
			t.Errorf("arg %d: Bytes %v, want %v", i, p.Bytes(i), w)
		}
		if i < 11 && uintptr(params[i])%8 != 0 {
			t.Errorf("arg %d: slot %p not 8-byte aligned", i, params[i])
		}
	}
	// Typed reads, as a kernel would see them.
	if v := *(*int32)(params[1]); v != -5 {
		t.Errorf("int32 read %d", v)
	}
	if v := *(*float32)(params[5]); v != 1.5 {
		t.Errorf("float32 read %v", v)
	}
	if v := *(*uint64)(params[0]); v != 0x7f0012345600 {
		t.Errorf("pointer read %#x", v)
	}
	if !strings.Contains(p.String(), "cudadrv.DevPtr") || !strings.Contains(p.String(), "float32") {
		t.Errorf("String() = %q", p.String())
	}

	empty, err := PackArgs()
	if err != nil || empty.Len() != 0 || empty.kernelParams() != nil {
		t.Errorf("empty pack: %v %v", empty, err)
	}
	var nilArgs *Args
	if nilArgs.Len() != 0 || nilArgs.kernelParams() != nil {
		t.Error("nil *Args")
	}

	for _, bad := range []any{int(1), uint(1), uintptr(1), nil, "s", true, RawArg{}, []float32{1}} {
		if _, err := PackArgs(int32(1), bad); err == nil {
			t.Errorf("PackArgs accepted %T", bad)
		} else if !strings.Contains(err.Error(), "argument 1") {
			t.Errorf("error does not name the argument: %v", err)
		}
	}
}

func TestAsBytes(t *testing.T) {
	b := AsBytes([]float32{1, -2})
	if len(b) != 8 || binary.LittleEndian.Uint32(b) != math.Float32bits(1) || binary.LittleEndian.Uint32(b[4:]) != math.Float32bits(-2) {
		t.Errorf("AsBytes float32: %v", b)
	}
	if len(AsBytes([]uint16{1, 2, 3})) != 6 || AsBytes([]int32(nil)) != nil {
		t.Error("AsBytes sizes")
	}
	s := []float32{0}
	AsBytes(s)[3] = 0x3f
	AsBytes(s)[2] = 0x80
	if s[0] != 1 {
		t.Errorf("AsBytes does not alias: %v", s)
	}
	if DevPtr(0x100).Add(0x20) != 0x120 {
		t.Error("DevPtr.Add")
	}
}

func TestSearchDirs(t *testing.T) {
	env := map[string]string{
		"CUDA_HOME":       "/opt/cuda",
		"LD_LIBRARY_PATH": "/a:/b::/a:/usr/local/cuda/lib64/",
	}
	getenv := func(k string) string { return env[k] }
	dirs := searchDirs(getenv, "amd64", []string{"/usr/local/cuda-13.0", "/usr/local/cuda-12.9"})
	want := []string{
		"/opt/cuda/lib64", "/opt/cuda/lib", "/opt/cuda/targets/x86_64-linux/lib",
		"/a", "/b", "/usr/local/cuda/lib64",
		"/usr/local/cuda/targets/x86_64-linux/lib",
		"/usr/local/cuda-13.0/lib64", "/usr/local/cuda-13.0/targets/x86_64-linux/lib",
		"/usr/local/cuda-12.9/lib64", "/usr/local/cuda-12.9/targets/x86_64-linux/lib",
		"/usr/local/nvidia/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/lib/wsl/lib",
	}
	if !reflect.DeepEqual(dirs, want) {
		t.Errorf("searchDirs:\n got %q\nwant %q", dirs, want)
	}
	arm := searchDirs(func(string) string { return "" }, "arm64", nil)
	if !contains(arm, "/usr/local/cuda/targets/sbsa-linux/lib") || !contains(arm, "/usr/lib/aarch64-linux-gnu") {
		t.Errorf("arm64 dirs %q", arm)
	}

	cands := libraryCandidates(nvrtcLibNames, []string{"/x", "/y"}, "")
	wantC := []string{
		"libnvrtc.so.13", "/x/libnvrtc.so.13", "/y/libnvrtc.so.13",
		"libnvrtc.so.12", "/x/libnvrtc.so.12", "/y/libnvrtc.so.12",
		"libnvrtc.so", "/x/libnvrtc.so", "/y/libnvrtc.so",
	}
	if !reflect.DeepEqual(cands, wantC) {
		t.Errorf("candidates %q", cands)
	}
	if c := libraryCandidates(cudaLibNames, []string{"/x"}, "/my/libcuda.so.1"); !reflect.DeepEqual(c, []string{"/my/libcuda.so.1"}) {
		t.Errorf("override %q", c)
	}
	if cudaLibNames[0] != "libcuda.so.1" || cublasLibNames[0] != "libcublas.so.13" || cublasLibNames[1] != "libcublas.so.12" ||
		nvrtcLibNames[0] != "libnvrtc.so.13" {
		t.Error("library name preference changed")
	}

	glob := func(string) ([]string, error) {
		return []string{"/usr/local/cuda-12.9", "/usr/local/cuda-13.0", "/usr/local/cuda-12.10", "/usr/local/cuda-11.8"}, nil
	}
	if got, want := versionedToolkits(glob), []string{"/usr/local/cuda-13.0", "/usr/local/cuda-12.10", "/usr/local/cuda-12.9", "/usr/local/cuda-11.8"}; !reflect.DeepEqual(got, want) {
		t.Errorf("versionedToolkits %q", got)
	}

	if g := companionGlobs("/usr/local/cuda/lib64/libcublas.so.13"); len(g) != 1 || g[0] != filepath.Clean("/usr/local/cuda/lib64/libcublasLt.so.13") {
		t.Errorf("cublas companions %q", g)
	}
	if g := companionGlobs("/usr/local/cuda/lib64/libnvrtc.so.13"); len(g) != 1 || g[0] != "/usr/local/cuda/lib64/libnvrtc-builtins.so.13*" {
		t.Errorf("nvrtc companions %q", g)
	}
	if g := companionGlobs("libcublas.so.13"); g != nil {
		t.Errorf("bare name companions %q", g)
	}
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

func TestWantsCUBIN(t *testing.T) {
	cases := []struct {
		opts []string
		want bool
	}{
		{[]string{"--gpu-architecture=sm_90"}, true},
		{[]string{"--gpu-architecture=sm_90a", "-lineinfo"}, true},
		{[]string{"-arch=sm_80"}, true},
		{[]string{"-arch", "sm_90"}, true},
		{[]string{"--gpu-architecture", "compute_90"}, false},
		{[]string{"--gpu-architecture=compute_90"}, false},
		{[]string{"-default-device"}, false},
		{nil, false},
		{[]string{"-arch=sm_90", "-arch=compute_90"}, false}, // the last one wins, as in nvcc
	}
	for _, c := range cases {
		if got := WantsCUBIN(c.opts); got != c.want {
			t.Errorf("WantsCUBIN(%q) = %v", c.opts, got)
		}
	}
}

func TestImageKind(t *testing.T) {
	if imageKind([]byte("\x7fELF\x02\x01")) != "CUBIN" || imageKind([]byte{0x50, 0xed, 0x55, 0xba, 1}) != "fatbin" ||
		imageKind([]byte(".version 8.0\n")) != "PTX" {
		t.Error("imageKind")
	}
	if bufString([]byte("abc\x00junk")) != "abc" || bufString([]byte("  x  ")) != "x" {
		t.Error("bufString")
	}
	b := []byte("hello\x00")
	if goString(&b[0]) != "hello" || goString(nil) != "" {
		t.Error("goString")
	}
	if _, err := cString("a\x00b"); err == nil {
		t.Error("cString accepted NUL")
	}
	if c, _ := cString("ab"); string(c) != "ab\x00" {
		t.Error("cString")
	}
}

func TestDeviceProps(t *testing.T) {
	p := DeviceProps{Major: 9, Minor: 0, MemClockKHz: 2619000, MemBusWidth: 5120}
	if p.Arch() != "sm_90" || p.VirtualArch() != "compute_90" {
		t.Error(p.Arch(), p.VirtualArch())
	}
	if bw := p.PeakBandwidth(); math.Abs(bw-3.352e12) > 1e9 {
		t.Errorf("PeakBandwidth %g", bw)
	}
}
