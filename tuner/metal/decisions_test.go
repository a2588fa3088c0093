package metal

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/device"
	"github.com/kerntune/kerntune/tuner/internal/gpuhost"
)

// supportsUpTo is a fake supportsFamily: of a device that supports the
// Apple families up to apple (0: none) and, when mac2, Mac2; it records
// the families it was asked about.
func supportsUpTo(apple int, mac2 bool, asked *[]int) func(int) bool {
	return func(f int) bool {
		*asked = append(*asked, f)
		if f == gpuFamilyMac2 {
			return mac2
		}
		return f >= gpuFamilyApple1 && f < gpuFamilyApple1+apple
	}
}

// The family comes from supportsFamily: alone, Apple10 first, whatever the
// macOS version; Mac2 is asked about in any case.
func TestProbeGPUFamily(t *testing.T) {
	for _, c := range []struct {
		name      string
		apple     int
		mac2      bool
		want      gpuFamily
		key       string
		firstAsks []int
	}{
		{"M1 (Apple7, Mac2)", 7, true, gpuFamily{7, true}, "apple7", []int{1010, 1009, 1008, 1007}},
		{"M2 (Apple8, Mac2)", 8, true, gpuFamily{8, true}, "apple8", []int{1010, 1009, 1008}},
		{"M3 or M4 (Apple9, Mac2)", 9, true, gpuFamily{9, true}, "apple9", []int{1010, 1009}},
		{"M5 (Apple10, Mac2)", 10, true, gpuFamily{10, true}, "apple10", []int{1010}},
		{"Intel Mac AMD GPU (Mac2 only)", 0, true, gpuFamily{0, true}, "mac2", []int{1010, 1009, 1008, 1007, 1006, 1005, 1004, 1003, 1002, 1001}},
		{"nothing known", 0, false, gpuFamily{0, false}, "metal", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var asked []int
			got := probeGPUFamily(supportsUpTo(c.apple, c.mac2, &asked))
			if got != c.want {
				t.Errorf("probeGPUFamily = %+v, want %+v", got, c.want)
			}
			if k := got.key(); k != c.key {
				t.Errorf("key = %q, want %q", k, c.key)
			}
			if !slices.Contains(asked, gpuFamilyMac2) {
				t.Errorf("Mac2 was not probed (asked %v)", asked)
			}
			if c.firstAsks != nil && !slices.Equal(asked[:len(c.firstAsks)], c.firstAsks) {
				t.Errorf("probe order %v, want it to start %v (highest first)", asked, c.firstAsks)
			}
		})
	}
}

// simdgroup_matrix needs Apple7 or later; a Mac2-only GPU (an Intel Mac)
// must not be offered MMA candidates.
func TestSIMDGroupMatrixGate(t *testing.T) {
	k, err := kernels.Get("gemm_av")
	if err != nil {
		t.Fatal(err)
	}
	mma := search.Candidate{"BM": 32, "BN": 32, "BK": 16, "TM": 1, "TN": 1, "PAD": 0, "MMA": 1}
	for _, c := range []struct {
		name string
		fam  gpuFamily
		want bool
	}{
		{"A13 (Apple6)", gpuFamily{6, false}, false},
		{"M1 (Apple7, Mac2)", gpuFamily{7, true}, true},
		{"M3 (Apple9, Mac2)", gpuFamily{9, true}, true},
		{"Intel Mac (Mac2 only)", gpuFamily{0, true}, false},
		{"unknown", gpuFamily{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.fam.simdgroupMatrix(); got != c.want {
				t.Errorf("simdgroupMatrix() = %t, want %t", got, c.want)
			}
			var featureErr error
			for _, con := range (device.Limits{GPU: deviceLimits(0, 0, c.fam)}).Constraints(k, kernels.F32) {
				if con.Name == "GPU family features" {
					featureErr = con.Check(mma)
				}
			}
			if c.want && featureErr != nil {
				t.Errorf("an MMA candidate is rejected: %v", featureErr)
			}
			if !c.want && (featureErr == nil || !strings.Contains(featureErr.Error(), "simdgroup_matrix")) {
				t.Errorf("an MMA candidate is offered (constraint says %v)", featureErr)
			}
		})
	}
}

func TestCheckPipeline(t *testing.T) {
	ok := pipelineLimits{maxThreads: 1024, staticShared: 8192, simdWidth: 32}
	for _, c := range []struct {
		name     string
		threads  int
		p        pipelineLimits
		width32  bool
		contains string // "" = accepted
	}{
		{"fits", 256, ok, true, ""},
		{"register pressure", 1024, pipelineLimits{768, 0, 32}, true, "768"},
		{"threadgroup memory above 32 KB", 256, pipelineLimits{1024, 40000, 32}, true, "40000"},
		{"SIMD width 64 (AMD)", 256, pipelineLimits{1024, 0, 64}, true, "threadExecutionWidth is 64"},
		{"SIMD width 16 (Intel)", 256, pipelineLimits{1024, 0, 16}, true, "threadExecutionWidth is 16"},
		{"SIMD width 8 (Intel)", 256, pipelineLimits{1024, 0, 8}, true, "assume 32 lanes"},
		{"raw source, width 64", 256, pipelineLimits{1024, 0, 64}, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			testutil.WantErr(t, checkPipeline(c.threads, maxSharedPerGroup, c.p, c.width32), c.contains)
		})
	}
}

// A timestamp of 0 (not recorded) never passes as a measurement, even when
// end − start is positive.
func TestGPUElapsed(t *testing.T) {
	for _, c := range []struct {
		start, end float64
		want       float64 // < 0: an error
	}{
		{1000.000, 1000.001, 0.001},
		{0.5, 0.75, 0.25},
		{0, 1000.001, -1},   // start not recorded
		{0, 0, -1},          // neither recorded
		{1000, 0, -1},       // end not recorded
		{1000, 1000, -1},    // zero length
		{1000, 999.9, -1},   // backwards
		{-1, 5, -1},         // negative start
		{math.NaN(), 1, -1}, // garbage
		{1, math.NaN(), -1},
		{1, math.Inf(1), -1},
	} {
		got, err := gpuElapsed(c.start, c.end)
		if c.want < 0 {
			if err == nil || !strings.Contains(err.Error(), "measurement error") {
				t.Errorf("gpuElapsed(%g, %g) = %g, %v; want a measurement error", c.start, c.end, got, err)
			}
			continue
		}
		if err != nil || math.Abs(got-c.want) > 1e-9 {
			t.Errorf("gpuElapsed(%g, %g) = %g, %v; want %g", c.start, c.end, got, err, c.want)
		}
	}
}

// The runs per command buffer follow the warm time of a run: a count taken
// on a cold first run is replaced once warm samples show it is off by more
// than a factor of two, and kept otherwise.
func TestRevisedDispatches(t *testing.T) {
	for _, c := range []struct {
		name        string
		d           int
		perDispatch float64
		want        int
	}{
		{"no count yet", 0, 10e-6, 100},
		{"cold estimate 10× too slow", 10, 5e-6, 200},
		{"cold estimate capped", 4, 1e-6, 256},
		{"kernel slower than estimated", 100, 50e-6, 20},
		{"within a factor of two: kept", 200, 5.5e-6, 200},
		{"slightly slower: kept", 100, 15e-6, 100},
		{"at the cap: kept", 256, 1e-6, 256},
		{"one long run: kept", 1, 5e-3, 1},
		{"no sample time: kept", 37, 0, 37},
		{"NaN: kept", 37, math.NaN(), 37},
	} {
		if got := gpuhost.RevisedRuns(c.d, c.perDispatch, targetBufferSeconds, maxDispatches); got != c.want {
			t.Errorf("%s: gpuhost.RevisedRuns(%d, %g) = %d, want %d", c.name, c.d, c.perDispatch, got, c.want)
		}
	}
	// Settled: revising with the time that produced a count keeps it.
	for _, per := range []float64{1e-7, 3e-6, 10e-6, 0.4e-3, 2e-3} {
		d := gpuhost.RunsPerSample(per, targetBufferSeconds, maxDispatches)
		if got := gpuhost.RevisedRuns(d, per, targetBufferSeconds, maxDispatches); got != d {
			t.Errorf("per %g: %d revised to %d", per, d, got)
		}
	}
}

// The math mode is MLX's default, safe, unless asked for; an unknown one
// is refused when the backend opens.
func TestCompileSettings(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
		bad  bool
	}{
		{Options{}, MathSafe, false},
		{Options{MathMode: "safe"}, MathSafe, false},
		{Options{MathMode: "relaxed"}, MathRelaxed, false},
		{Options{MathMode: "fast"}, MathFast, false},
		{Options{MathMode: "quick"}, "", true},
	} {
		got, err := compileSettingsFor(c.o)
		if (err != nil) != c.bad || got.mode != c.want {
			t.Errorf("compileSettingsFor(%+v) = %+v, %v; want mode %q (error: %v)", c.o, got, err, c.want, c.bad)
		}
	}
}

// Kernels are compiled as MLX compiles them on each macOS: from macOS 15
// with setMathMode: alone (MTLMathModeSafe 0, Relaxed 1, Fast 2), which
// keeps the default fast FP32 math functions; setFastMathEnabled:NO there
// would also select precise ones. Before macOS 15 setFastMathEnabled:, and
// relaxed, which only mathMode offers, is refused.
func TestMathSettingPerMacOS(t *testing.T) {
	for _, c := range []struct {
		mode  string
		macOS int
		want  mathSetting
		bad   string
	}{
		{"safe", 15, mathSetting{useMathMode: true, mathMode: 0}, ""},
		{"", 15, mathSetting{useMathMode: true, mathMode: 0}, ""},
		{"relaxed", 15, mathSetting{useMathMode: true, mathMode: 1}, ""},
		{"fast", 26, mathSetting{useMathMode: true, mathMode: 2}, ""},
		{"safe", 14, mathSetting{fastMath: false}, ""},
		{"fast", 14, mathSetting{fastMath: true}, ""},
		{"safe", 0, mathSetting{fastMath: false}, ""}, // version unknown: the selector every macOS answers
		{"relaxed", 14, mathSetting{}, "macOS 15"},
		{"quick", 15, mathSetting{}, "not safe, relaxed or fast"},
	} {
		got, err := mathSettingFor(c.mode, c.macOS)
		if c.bad != "" {
			if err == nil || !strings.Contains(err.Error(), c.bad) {
				t.Errorf("%q on macOS %d: error %v, want one containing %q", c.mode, c.macOS, err, c.bad)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q on macOS %d: %+v, %v; want %+v", c.mode, c.macOS, got, err, c.want)
		}
	}
	for mode, want := range map[string]int64{"safe": 0, "relaxed": 1, "fast": 2} {
		if v, ok := MathModeValue(mode); !ok || v != want {
			t.Errorf("MathModeValue(%q) = %d, %v; want %d (MTLMathMode)", mode, v, ok, want)
		}
	}
}

// Candidates are verified on a NaN-poisoned output, MPS on a zeroed one (a
// result it reads as an addend with beta = 0 must not turn into NaN).
func TestPrepareOutput(t *testing.T) {
	for _, dt := range kernels.DTypes {
		for _, c := range []struct {
			vendor bool
			nan    bool
		}{{false, true}, {true, false}} {
			buf := make([]byte, gpuhost.BufferBytes(dt, 37))
			gpuhost.FillWords(buf, gpuhost.NaNWord(dt)) // a previous candidate's poison must not survive for MPS
			prepareOutput(buf, dt, c.vendor)
			for i, v := range kernels.Decode(dt, buf[:37*dt.Size()]) {
				if c.nan && !math.IsNaN(float64(v)) {
					t.Fatalf("%s candidate: element %d = %g, want NaN", dt, i, v)
				}
				if !c.nan && v != 0 {
					t.Fatalf("%s vendor baseline: element %d = %g, want 0", dt, i, v)
				}
			}
			// What an MPS GEMM with beta = 0 computes if it reads C: 0·C + A·B.
			if !c.nan {
				for i, v := range kernels.Decode(dt, buf[:37*dt.Size()]) {
					if r := 0*v + 1.5; r != 1.5 {
						t.Fatalf("%s: 0·C[%d] + 1.5 = %g", dt, i, r)
					}
				}
			}
		}
	}
}

func TestKernelCompileOptions(t *testing.T) {
	// A kernel's own math mode (an MLX spec's compile_options) wins over the backend's.
	for _, c := range []struct{ own, backend, want string }{
		{"", "safe", "safe"}, {"", "fast", "fast"}, {"safe", "fast", "safe"}, {"relaxed", "safe", "relaxed"},
	} {
		if got := kernelMathMode(c.own, c.backend); got != c.want {
			t.Errorf("kernel %q, backend %q: %q, want %q", c.own, c.backend, got, c.want)
		}
	}
	for v, want := range map[string]uint64{"": 0, "3.0": 0x30000, "3.1": 0x30001, "3.2": 0x30002, "4.0": 0x40000, "2.4": 1, "3": 1, "3.1.0": 1, "03.1": 1} {
		got, err := languageVersion(v)
		if want == 1 {
			if err == nil {
				t.Errorf("language version %q: %#x, want an error", v, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("language version %q: %#x, %v; want %#x", v, got, err, want)
		}
	}
}

// The language version follows the macOS as MLX's get_metal_version does,
// and its MTLLanguageVersion values are Apple's ((major << 16) + minor).
func TestLanguageForMacOS(t *testing.T) {
	for _, c := range []struct {
		macOS int
		want  string
		value uint64
	}{
		{0, "3.0", 0x30000}, {11, "2.3", 0x20003}, {12, "2.4", 0x20004}, {13, "3.0", 0x30000},
		{14, "3.1", 0x30001}, {15, "3.2", 0x30002}, {26, "4.0", 0x40000}, {27, "4.1", 0x40001},
	} {
		got := languageForMacOS(c.macOS)
		if got != c.want {
			t.Errorf("macOS %d: Metal %s, want %s", c.macOS, got, c.want)
		}
		v, err := mtlLanguageVersion(got)
		if err != nil || v != c.value {
			t.Errorf("Metal %s: %#x, %v; want %#x", got, v, err, c.value)
		}
		if languageName(v) != got {
			t.Errorf("%#x reads back as %s, want %s", v, languageName(v), got)
		}
	}
	for v, want := range map[uint64]float64{0x30000: 3.0, 0x30001: 3.1, 0x30002: 3.2, 0x40000: 4.0} {
		if got := languageFact(v); got != want {
			t.Errorf("metal_language_version of %#x: %g, want %g", v, got, want)
		}
	}
	for _, bad := range []string{"", "1.2", "5.0", "3", "3.10"} {
		if _, err := mtlLanguageVersion(bad); err == nil {
			t.Errorf("language version %q accepted", bad)
		}
	}
}

// A kernel's own version (an MLX spec's metal_version) wins over the one
// picked for the macOS; there is always one.
func TestKernelLanguage(t *testing.T) {
	for _, c := range []struct {
		own, backend, name string
		value              uint64
	}{
		{"", "3.2", "3.2", 0x30002}, {"3.1", "3.2", "3.1", 0x30001}, {"4.0", "3.1", "4.0", 0x40000}, {"", "2.4", "2.4", 0x20004},
	} {
		v, name, err := kernelLanguage(c.own, c.backend)
		if err != nil || v != c.value || name != c.name {
			t.Errorf("own %q, backend %q: %#x %s %v; want %#x %s", c.own, c.backend, v, name, err, c.value, c.name)
		}
	}
	if _, _, err := kernelLanguage("2.4", "3.2"); err == nil {
		t.Error("a kernel's own version below 3.0 accepted")
	}
	if _, _, err := kernelLanguage("", ""); err == nil {
		t.Error("no version at all accepted: compileOptions must always set one")
	}
}
