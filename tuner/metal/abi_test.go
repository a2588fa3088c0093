//go:build (linux || darwin) && (amd64 || arm64)

package metal

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/ebitengine/purego"

	"github.com/kerntune/kerntune/internal/testutil"
)

// abiTestC has the C prototypes of the Objective-C methods the backend
// calls through typed objc_msgSend signatures (self and _cmd first, as
// objc_msgSend passes them to a method's implementation). Each records what
// it received. BOOL is _Bool here; on darwin/amd64 it is signed char, which
// occupies an argument slot the same way.
const abiTestC = `
#include <stdint.h>
#include <stdbool.h>
typedef struct { unsigned long width, height, depth; } MTLSize;
static uint64_t rec[16];
static double recd[4];
void kt_get(uint64_t *out, double *outd) {
  for (int i = 0; i < 16; i++) out[i] = rec[i];
  for (int i = 0; i < 4; i++) outd[i] = recd[i];
}
void kt_dispatch(void *self, void *cmd, MTLSize groups, MTLSize threads) {
  rec[0] = (uint64_t)(uintptr_t)self; rec[1] = (uint64_t)(uintptr_t)cmd;
  rec[2] = groups.width; rec[3] = groups.height; rec[4] = groups.depth;
  rec[5] = threads.width; rec[6] = threads.height; rec[7] = threads.depth;
}
MTLSize kt_max_threads(void *self, void *cmd) {
  MTLSize s = { (unsigned long)(uintptr_t)self + 1024, (unsigned long)(uintptr_t)cmd + 512, 64 };
  return s;
}
double kt_gpu_time(void *self, void *cmd) { return (double)(uintptr_t)self * 0.5 + 0.25; }
static const char kt_text[] = "Apple M3 Max";
const char *kt_utf8(void *self, void *cmd) { return kt_text; }
void *kt_matmul_init(void *self, void *cmd, void *device, bool tl, bool tr,
                     unsigned long rows, unsigned long cols, unsigned long inner, double alpha, double beta) {
  rec[0] = (uint64_t)(uintptr_t)self; rec[1] = (uint64_t)(uintptr_t)cmd; rec[2] = (uint64_t)(uintptr_t)device;
  rec[3] = tl; rec[4] = tr; rec[5] = rows; rec[6] = cols; rec[7] = inner;
  recd[0] = alpha; recd[1] = beta;
  return self;
}
void *kt_matvec_init(void *self, void *cmd, void *device, bool t,
                     unsigned long rows, unsigned long cols, double alpha, double beta) {
  rec[0] = (uint64_t)(uintptr_t)self; rec[1] = (uint64_t)(uintptr_t)cmd; rec[2] = (uint64_t)(uintptr_t)device;
  rec[3] = t; rec[4] = rows; rec[5] = cols;
  recd[0] = alpha; recd[1] = beta;
  return device;
}
`

// TestTypedSendABI calls C functions with the backend's objc_msgSend
// signatures through purego, as the backend calls Metal: MTLSize by value
// (24 bytes: by reference on arm64, on the stack on amd64), MTLSize
// returned (x8 / hidden pointer), double and pointer returns, and the MPS
// initialisers' mix of 8 integer-class and 2 double arguments (on amd64 two
// of the integers go on the stack). The C ABIs of linux and darwin agree
// for all of these; it needs a C compiler and is skipped without one.
func TestTypedSendABI(t *testing.T) {
	lib := buildABILib(t)
	var get func(out *[16]uint64, outd *[4]float64)
	purego.RegisterLibFunc(&get, lib, "kt_get")
	record := func() ([16]uint64, [4]float64) {
		var r [16]uint64
		var d [4]float64
		get(&r, &d)
		return r, d
	}

	var dispatch sendDispatchFn
	purego.RegisterLibFunc(&dispatch, lib, "kt_dispatch")
	g, th := grid(151936/8, 3, 256)
	dispatch(0xabc0, 0xdef0, g, th)
	r, _ := record()
	if want := [8]uint64{0xabc0, 0xdef0, 18992, 3, 1, 256, 1, 1}; [8]uint64(r[:8]) != want {
		t.Errorf("dispatchThreadgroups: C received %v, want %v", r[:8], want)
	}

	var size sendSizeFn
	purego.RegisterLibFunc(&size, lib, "kt_max_threads")
	if got, want := size(1, 2), (mtlSize{Width: 1025, Height: 514, Depth: 64}); got != want {
		t.Errorf("MTLSize return: got %+v, want %+v", got, want)
	}

	var double sendDoubleFn
	purego.RegisterLibFunc(&double, lib, "kt_gpu_time")
	if got := double(6, 0); got != 3.25 {
		t.Errorf("double return: got %g, want 3.25", got)
	}

	var ptr sendPtrFn
	purego.RegisterLibFunc(&ptr, lib, "kt_utf8")
	if got := cString(ptr(0, 0)); got != "Apple M3 Max" {
		t.Errorf("pointer return + cString: got %q", got)
	}

	var mm sendMatMulInitFn
	purego.RegisterLibFunc(&mm, lib, "kt_matmul_init")
	if ret := mm(0x1000, 0x2000, 0x3000, true, false, 4096, 16, 896, 1, 0.5); ret != 0x1000 {
		t.Errorf("matmul init returned %#x", ret)
	}
	r, d := record()
	if want := [8]uint64{0x1000, 0x2000, 0x3000, 1, 0, 4096, 16, 896}; [8]uint64(r[:8]) != want || d[0] != 1 || d[1] != 0.5 {
		t.Errorf("MPSMatrixMultiplication init: C received %v alpha %g beta %g, want %v 1 0.5", r[:8], d[0], d[1], want)
	}

	var mv sendMatVecInitFn
	purego.RegisterLibFunc(&mv, lib, "kt_matvec_init")
	if ret := mv(0x1000, 0x2000, 0x3000, false, 151936, 896, 1, 1); ret != 0x3000 {
		t.Errorf("matvec init returned %#x", ret)
	}
	r, d = record()
	if want := [6]uint64{0x1000, 0x2000, 0x3000, 0, 151936, 896}; [6]uint64(r[:6]) != want || d[0] != 1 || d[1] != 1 {
		t.Errorf("MPSMatrixVectorMultiplication init: C received %v alpha %g beta %g, want %v 1 1", r[:6], d[0], d[1], want)
	}
}

func buildABILib(t *testing.T) uintptr {
	t.Helper()
	cc := testutil.CCompiler()
	if cc == "" {
		testutil.SkipUnlessRequired(t, "KTDEV_REQUIRE_CC", "no C compiler (cc, gcc, clang): the purego ABI check needs one")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "abi.c")
	lib := filepath.Join(dir, "libktabi.so")
	if err := os.WriteFile(src, []byte(abiTestC), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"-shared", "-fPIC", "-O1", "-o", lib, src}
	if runtime.GOOS == "darwin" {
		args = append([]string{"-arch", map[string]string{"amd64": "x86_64", "arm64": "arm64"}[runtime.GOARCH]}, args...)
	}
	if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, out)
	}
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
