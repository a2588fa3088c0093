package cldrv

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
)

func TestErrorNames(t *testing.T) {
	tests := []struct {
		call string
		code int32
		want string
	}{
		{"clBuildProgram", -11, "clBuildProgram: CL_BUILD_PROGRAM_FAILURE (-11)"},
		{"clEnqueueNDRangeKernel", -54, "clEnqueueNDRangeKernel: CL_INVALID_WORK_GROUP_SIZE (-54)"},
		{"clGetPlatformIDs", -1001, "clGetPlatformIDs: CL_PLATFORM_NOT_FOUND_KHR (-1001)"},
		{"clCreateBuffer", -9999, "clCreateBuffer: unknown OpenCL error -9999 (-9999)"},
	}
	for _, tc := range tests {
		err := check(tc.call, tc.code)
		if err == nil || err.Error() != tc.want {
			t.Errorf("check(%s, %d) = %v, want %q", tc.call, tc.code, err, tc.want)
		}
		var e *Error
		if !errors.As(err, &e) || e.Code != tc.code {
			t.Errorf("check(%s, %d) is not an *Error with the code", tc.call, tc.code)
		}
	}
	if err := check("clFinish", 0); err != nil {
		t.Errorf("CL_SUCCESS gave %v", err)
	}
}

func TestLoadMissingLibrary(t *testing.T) {
	_, err := LoadWith("/nonexistent/libOpenCL.so.1")
	if !errors.Is(err, ErrNoDriver) || !strings.Contains(err.Error(), "/nonexistent/libOpenCL.so.1") {
		t.Fatalf("LoadWith(missing) = %v, want ErrNoDriver naming the path", err)
	}
}

// firstDevice opens the first OpenCL device, skipping when there is none
// unless KTDEV_REQUIRE_OPENCL is set (CI installs PoCL and sets it).
func firstDevice(t *testing.T) (*Lib, Device, DeviceProps) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		testutil.SkipUnlessRequired(t, "KTDEV_REQUIRE_OPENCL", format+" (apt-get install pocl-opencl-icd ocl-icd-libopencl1)", args...)
	}
	l, err := Load()
	if err != nil {
		fail("%v", err)
	}
	ps, err := l.Platforms()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		ds, err := l.Devices(p, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) > 0 {
			props, err := l.DeviceProps(ds[0])
			if err != nil {
				t.Fatal(err)
			}
			return l, ds[0], props
		}
	}
	fail("no OpenCL device among %d platforms", len(ps))
	return nil, 0, DeviceProps{}
}

// firstContext is a context on firstDevice's device, closed when t ends.
func firstContext(t *testing.T) (*Context, DeviceProps) {
	t.Helper()
	l, d, props := firstDevice(t)
	c, err := l.NewContext(d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, props
}

const testKernel = `
__kernel void axpy(__global const half* x, __global float* y, const float a, const int n) {
  const int i = get_global_id(0);
  if (i < n) y[i] = a * vload_half(i, x) + y[i];
}`

// A real device runs a kernel that reads half data, with profiling events.
func TestRunKernel(t *testing.T) {
	c, props := firstContext(t)
	if props.Name == "" || props.ComputeUnits < 1 || props.MaxWorkGroupSize < 1 || props.LocalMemBytes <= 0 {
		t.Fatalf("implausible device properties %+v", props)
	}
	t.Logf("device %q (%s), %d compute units, OpenCL C %q", props.Name, props.Vendor, props.ComputeUnits, props.CVersion)
	p, err := c.Build(testKernel, "-cl-std=CL1.2")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	k, err := p.Kernel("axpy")
	if err != nil {
		t.Fatal(err)
	}
	defer k.Release()
	const n = 1000
	xh := make([]byte, 2*n)
	yb := make([]byte, 4*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint16(xh[2*i:], 0x3c00) // 1.0 in half
		binary.LittleEndian.PutUint32(yb[4*i:], math.Float32bits(float32(i)))
	}
	x, err := c.Alloc(len(xh))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free(x)
	y, err := c.Alloc(len(yb))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free(y)
	if err := c.Write(x, xh); err != nil {
		t.Fatal(err)
	}
	if err := c.Write(y, yb); err != nil {
		t.Fatal(err)
	}
	ev, err := k.Launch([2]int{(n + 63) / 64, 1}, [2]int{64, 1}, true, x, y, float32(2), int32(n))
	if err != nil {
		t.Fatal(err)
	}
	secs, err := c.Times([]Event{ev})
	if err != nil {
		t.Fatal(err)
	}
	if len(secs) != 1 || secs[0] < 0 {
		t.Fatalf("event times %v", secs)
	}
	if err := c.Read(yb, y); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(yb[4*i:])); got != float32(i)+2 {
			t.Fatalf("y[%d] = %g, want %g", i, got, float32(i)+2)
		}
	}
	// Fill32 poisons, as the backend does before verification.
	if err := c.Fill32(y, 0x7fc00000, n); err != nil {
		t.Fatal(err)
	}
	if err := c.Read(yb, y); err != nil {
		t.Fatal(err)
	}
	if v := math.Float32frombits(binary.LittleEndian.Uint32(yb[4*(n-1):])); !math.IsNaN(float64(v)) {
		t.Fatalf("after Fill32 y[n-1] = %g, want NaN", v)
	}
	if _, err := k.Launch([2]int{1, 1}, [2]int{64, 1}, false, x, "y"); err == nil || !strings.Contains(err.Error(), "argument 1") {
		t.Fatalf("launch with a string argument: %v, want an error naming argument 1", err)
	}
}

// A build failure names clBuildProgram and carries the compiler's log.
func TestBuildLogInError(t *testing.T) {
	c, _ := firstContext(t)
	_, err := c.Build("__kernel void bad(__global float* y) { y[0] = undefined_identifier_kt; }", "")
	var e *Error
	if !errors.As(err, &e) || e.Call != "clBuildProgram" || e.Code != -11 {
		t.Fatalf("build of broken source: %v, want clBuildProgram CL_BUILD_PROGRAM_FAILURE", err)
	}
	if !strings.Contains(e.Log, "undefined_identifier_kt") {
		t.Fatalf("build log does not name the undeclared identifier:\n%s", e.Log)
	}
}
