package metal

import (
	"fmt"
	"math"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/tuner/internal/gpuhost"
)

// The decisions the darwin code takes about the device, the pipelines and
// the measurements, as pure functions so that they are tested on every
// platform (no Mac is needed to check them).

// MTLGPUFamily values (MTLDevice.h): Apple1 = 1001 … Apple10 = 1010, Mac2 = 2002.
const (
	gpuFamilyApple1  = 1001
	gpuFamilyApple10 = 1010
	gpuFamilyMac2    = 2002
)

// gpuFamily is what supportsFamily: says about a device: the highest
// MTLGPUFamilyApple<N> (0: none) and whether it supports MTLGPUFamilyMac2.
// Macs with Apple silicon report both (Apple's feature set tables: they
// support the union of the two families); Intel Macs' GPUs only Mac2.
type gpuFamily struct {
	apple int
	mac2  bool
}

// probeGPUFamily asks supports (-[MTLDevice supportsFamily:]) about every
// Apple family from Apple10 down to Apple1, stopping at the first
// supported, and about Mac2 in any case. Nothing depends on the macOS
// version: a family the running macOS does not define is simply not
// supported, so an M4 is never filed under an older family because a
// version string could not be read.
func probeGPUFamily(supports func(family int) bool) gpuFamily {
	var g gpuFamily
	for f := gpuFamilyApple10; f >= gpuFamilyApple1; f-- {
		if supports(f) {
			g.apple = f - gpuFamilyApple1 + 1
			break
		}
	}
	g.mac2 = supports(gpuFamilyMac2)
	return g
}

// key is the fallback key shared by similar devices: "apple<N>" for the
// highest Apple family, else "mac2" for a Mac2-only GPU (Intel Macs' AMD
// and Intel GPUs), else "metal".
func (g gpuFamily) key() string { return familyKey(g.apple, g.mac2) }

// simdgroupMatrix reports whether the device runs simdgroup_matrix
// (simdgroup_matrix loads, stores and multiply-accumulates): Apple7 and
// later (M1 on). Mac2 alone is not enough: Intel Macs' GPUs lack it.
func (g gpuFamily) simdgroupMatrix() bool { return g.apple >= 7 }

// simdWidth is the SIMD-group width the generated kernels assume: their
// reductions shuffle across 32 lanes (kernels/gpu prelude).
const simdWidth = gpu.ReductionLanes

// pipelineLimits is what a compute pipeline state reports about itself.
type pipelineLimits struct {
	maxThreads   int // maxTotalThreadsPerThreadgroup
	staticShared int // staticThreadgroupMemoryLength
	simdWidth    int // threadExecutionWidth
}

// checkPipeline rejects a compiled candidate the device cannot run as
// asked: more threads per threadgroup than its pipeline allows (the
// compiler lowers maxTotalThreadsPerThreadgroup when a kernel needs many
// registers), more static threadgroup memory than maxShared, or, for
// generated kernels (needWidth32), a SIMD-group width other than the 32
// their reductions assume (Apple GPUs have 32; Intel Macs' AMD and Intel
// GPUs may report 64, 16 or 8).
func checkPipeline(threads, maxShared int, p pipelineLimits, needWidth32 bool) error {
	if threads > p.maxThreads {
		return fmt.Errorf("needs %d threads per threadgroup but its pipeline allows %d (register pressure)", threads, p.maxThreads)
	}
	if p.staticShared > maxShared {
		return fmt.Errorf("uses %d bytes of threadgroup memory, more than %d", p.staticShared, maxShared)
	}
	if needWidth32 && p.simdWidth != simdWidth {
		return fmt.Errorf("the pipeline's threadExecutionWidth is %d, but the generated kernels' SIMD-group reductions assume %d lanes", p.simdWidth, simdWidth)
	}
	return nil
}

// gpuElapsed is a command buffer's GPU time from its GPUStartTime and
// GPUEndTime (seconds). Metal leaves both 0 when it did not record them; a
// time is accepted only when 0 < start < end, so a missing start can never
// pass as a measurement.
func gpuElapsed(start, end float64) (float64, error) {
	if !(start > 0) || !(end > start) || math.IsInf(end, 0) {
		return 0, fmt.Errorf("measurement error: command buffer GPU timestamps start %g s, end %g s; want 0 < start < end (GPUStartTime/GPUEndTime not recorded?)", start, end)
	}
	return end - start, nil
}

// Timing: each sample is one command buffer of several runs of the same
// kernel, long enough that the command buffer's own start-up is noise, and
// no longer than MLX makes its command buffers (runsLimit, timing.go).
const (
	targetBufferSeconds = 1e-3 // a timed command buffer lasts at least this long on the GPU
	maxDispatches       = 256  // … but holds no more runs than this, whatever MLX_MAX_OPS_PER_BUFFER says
	calibrationDispatch = 3    // runs in the command buffer that first estimates a kernel's time
)

// Math modes, as MLX's metal_kernel compile_options math_mode names them,
// and their MTLMathMode values (MTLLibrary.h, macOS 15).
const (
	MathSafe    = "safe"    // MTLMathModeSafe (0): IEEE 754 arithmetic; MLX's default
	MathRelaxed = "relaxed" // MTLMathModeRelaxed (1): no NaN/Inf guarantees, reassociation allowed
	MathFast    = "fast"    // MTLMathModeFast (2): relaxed, and approximate division and functions
)

// mathModes maps each math mode to its MTLMathMode.
var mathModes = map[string]int64{MathSafe: 0, MathRelaxed: 1, MathFast: 2}

// MathModeValue is a math mode's MTLMathMode value, the fact math_mode.
func MathModeValue(mode string) (int64, bool) {
	v, ok := mathModes[mode]
	return v, ok
}

// checkMathMode accepts "" (the default: MathSafe) and the three modes.
func checkMathMode(mode string) (string, error) {
	if mode == "" {
		return MathSafe, nil
	}
	if _, ok := mathModes[mode]; !ok {
		return "", fmt.Errorf("metal: math mode %q is not safe, relaxed or fast", mode)
	}
	return mode, nil
}

// compileSettings are what every kernel is compiled with: a math mode, set
// the way MLX sets it on the macOS that runs (mathSettingFor).
type compileSettings struct {
	mode       string // MathSafe, MathRelaxed or MathFast
	macOSMajor int    // the running macOS's major version; 0: unknown
	language   string // the Metal language version for macOSMajor (languageForMacOS)
}

// compileSettingsFor maps the backend's Options to compile settings; the
// macOS version is filled in once the device is described.
func compileSettingsFor(o Options) (compileSettings, error) {
	mode, err := checkMathMode(o.MathMode)
	if err != nil {
		return compileSettings{}, err
	}
	return compileSettings{mode: mode}, nil
}

// mathSetting is what compileOptions sends to an MTLCompileOptions.
type mathSetting struct {
	// useMathMode: send setMathMode: (macOS 15 and later) with mathMode;
	// otherwise setFastMathEnabled: with fastMath.
	useMathMode bool
	mathMode    int64 // MTLMathMode
	fastMath    bool
}

// mathSettingFor is how MLX compiles a kernel of the given math mode on a
// macOS of the given major version (mlx/backend/metal/device.cpp): on
// macOS 15 and later setMathMode: alone, which leaves
// mathFloatingPointFunctions at its default, fast FP32 functions (exp,
// rsqrt, …) even in the safe mode; before, setFastMathEnabled:, NO for
// safe. setFastMathEnabled:NO on macOS 15 would also select precise
// functions, slower than what MLX runs. Relaxed exists only as a
// mathMode: before macOS 15 it is refused rather than compiled another way.
// An unknown version (0) is taken for one before 15, whose selector every
// macOS still answers.
func mathSettingFor(mode string, macOSMajor int) (mathSetting, error) {
	mode, err := checkMathMode(mode)
	if err != nil {
		return mathSetting{}, err
	}
	if macOSMajor >= 15 {
		return mathSetting{useMathMode: true, mathMode: mathModes[mode]}, nil
	}
	if mode == MathRelaxed {
		return mathSetting{}, fmt.Errorf("metal: math mode \"relaxed\" needs MTLCompileOptions.mathMode (macOS 15); this is macOS %d: use \"safe\" or \"fast\"", macOSMajor)
	}
	return mathSetting{fastMath: mode == MathFast}, nil
}

// kernelMathMode is the math mode a kernel compiles with: its own
// (an MLX spec's compile_options math_mode), else the backend's.
func kernelMathMode(own, backend string) string {
	if own != "" {
		return own
	}
	return backend
}

// prepareOutput fills an output buffer before a verification run: with NaN
// for kerntune's own candidates, so that an element a candidate does not
// write fails verification, and with zeros for a vendor library (MPS),
// whose result matrix or vector is documented as an addend (C = α·AB + β·C):
// a library that reads it even with β = 0 would turn NaN into NaN
// (0·NaN = NaN) and fail for no fault of its own.
func prepareOutput(dst []byte, dt kernels.DType, vendor bool) {
	if vendor {
		clear(dst)
		return
	}
	gpuhost.FillWords(dst, gpuhost.NaNWord(dt))
}

// languageVersion is MTLLanguageVersion for "3.0" … "4.0": major<<16 | minor.
func languageVersion(v string) (uint64, error) {
	if v == "" {
		return 0, nil
	}
	var major, minor uint64
	if _, err := fmt.Sscanf(v, "%d.%d", &major, &minor); err != nil || major < 3 || major > 4 || minor > 9 || fmt.Sprintf("%d.%d", major, minor) != v {
		return 0, fmt.Errorf("metal: language version %q is not one of 3.0 … 4.x", v)
	}
	return major<<16 | minor, nil
}

// languageForMacOS is the Metal language version MLX compiles with on a
// macOS of the given major version (get_metal_version in
// mlx/backend/metal/device.cpp): 4.1 from macOS 27, 4.0 on 26, 3.2 on 15,
// 3.1 on 14. MLX needs macOS 14; older ones get the newest version they
// have (3.0 on 13, 2.4 on 12, 2.3 on 11), and an unknown one (0) 3.0.
// Left to Metal, the version would follow the SDK recorded in the binary
// (12.0 for Go's linker: MSL 2.4, without bfloat or atomic<float>).
func languageForMacOS(major int) string {
	switch {
	case major >= 27:
		return "4.1"
	case major == 26:
		return "4.0"
	case major >= 15:
		return "3.2"
	case major == 14:
		return "3.1"
	case major == 12:
		return "2.4"
	case major == 11:
		return "2.3"
	}
	return "3.0"
}

// mtlLanguageVersion is the MTLLanguageVersion value of a version the
// backend picks ("2.3" … "4.9"): major<<16 | minor, as Apple's headers
// define MTLLanguageVersion3_2 = (3 << 16) + 2.
func mtlLanguageVersion(v string) (uint64, error) {
	var major, minor uint64
	if _, err := fmt.Sscanf(v, "%d.%d", &major, &minor); err != nil || major < 2 || major > 4 || minor > 9 || fmt.Sprintf("%d.%d", major, minor) != v {
		return 0, fmt.Errorf("metal: language version %q is not one of 2.x … 4.x", v)
	}
	return major<<16 | minor, nil
}

// languageName is the version an MTLLanguageVersion value stands for
// ("3.2"), as the fact metal_language_version records it.
func languageName(v uint64) string { return fmt.Sprintf("%d.%d", v>>16, v&0xffff) }

// languageFact is metal_language_version's value: 3.2 for 0x30002.
func languageFact(v uint64) float64 { return float64(v>>16) + float64(v&0xffff)/10 }

// kernelLanguage is the MTLLanguageVersion a kernel compiles with: its own
// (an MLX spec's metal_version), else the backend's, picked for the macOS.
func kernelLanguage(own, backend string) (uint64, string, error) {
	if own != "" {
		v, err := languageVersion(own)
		return v, own, err
	}
	v, err := mtlLanguageVersion(backend)
	return v, backend, err
}
