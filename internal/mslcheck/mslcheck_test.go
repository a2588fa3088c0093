package mslcheck

import (
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
)

func TestIncludeFirst(t *testing.T) {
	for _, tt := range []struct {
		name, src, err string
	}{
		{"generated order", "// kerntune metal kernel k\n#include <metal_stdlib>\nusing namespace metal;\n#define N 64\n", ""},
		{"blank lines and comments first", "\n// a\n  // b\n#include <metal_stdlib>\n\nusing namespace metal;\n", ""},
		{"define first", "// k\n#define N 64\n#include <metal_stdlib>\nusing namespace metal;\n", "line 2: #define N before #include <metal_stdlib>"},
		{"code first", "typedef float T;\n#include <metal_stdlib>\nusing namespace metal;\n", `line 1: "typedef float T;" before`},
		{"no using", "#include <metal_stdlib>\n#define N 64\n", "line 2: \"#define N 64\" where using namespace metal;"},
		{"no include", "// nothing\n", "no #include <metal_stdlib>"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			testutil.WantErr(t, IncludeFirst(tt.src), tt.err)
		})
	}
}

func newChecker(t *testing.T) *Checker {
	t.Helper()
	c, err := New(Require(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const head = "#include <metal_stdlib>\nusing namespace metal;\n"

// Address-space mistakes that the syntax check lets through (it erases the
// address spaces) and the address-space check rejects, each with the
// diagnostic clang gives.
func TestAddressSpaceMistakes(t *testing.T) {
	c := newChecker(t)
	for _, tt := range []struct {
		name, src, diag string
	}{
		{"threadgroup memory where device memory is expected", `
inline float first(device const float* p) { return p[0]; }
kernel void kt_bad(device float* y [[buffer(0)]], uint3 tid [[thread_position_in_threadgroup]]) {
  threadgroup float s[32];
  s[tid.x] = 1.0f;
  y[0] = first(s);
}`, "no known conversion from '__local float[32]' to 'const __global float *"},
		{"thread memory where threadgroup memory is expected", `
inline float red(float v, threadgroup float* scratch) { scratch[0] = v; return scratch[0]; }
kernel void kt_bad(device float* y [[buffer(0)]]) {
  float s[32];
  y[0] = red(1.0f, s);
}`, "no known conversion from '__private float[32]' to '__local float *"},
		{"a store to constant memory", `
kernel void kt_bad(constant float* c [[buffer(0)]]) {
  c[0] = 1.0f;
}`, "read-only variable is not assignable"},
		{"simdgroup_load from thread memory", `
kernel void kt_bad(device float* y [[buffer(0)]]) {
  float a[64];
  simdgroup_float8x8 m;
  simdgroup_load(m, a, 8);
}`, "no matching function for call to 'simdgroup_load'"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := head + tt.src + "\n"
			if err := c.CheckText(Syntax, tt.name, src); err != nil {
				t.Fatalf("the syntax check rejects it (it should not see address spaces): %v", err)
			}
			err := c.CheckText(AddressSpaces, tt.name, src)
			if err == nil {
				t.Fatal("the address-space check accepts it")
			}
			if !strings.Contains(err.Error(), tt.diag) {
				t.Fatalf("the address-space check rejects it for another reason; want %q in:\n%v", tt.diag, err)
			}
		})
	}
}

// What MSL allows passes both checks: simdgroup matrices loaded from and
// stored to device and threadgroup memory, half arithmetic, constant
// references.
func TestAddressSpacesAccept(t *testing.T) {
	c := newChecker(t)
	src := head + `
kernel void kt_ok(device const half* x [[buffer(0)]], device float* y [[buffer(1)]], constant int& n [[buffer(2)]],
                  uint3 tid [[thread_position_in_threadgroup]]) {
  threadgroup float s[64];
  simdgroup_float8x8 m = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  simdgroup_load(m, s, 8);
  simdgroup_load(m, y, 8);
  simdgroup_multiply_accumulate(m, m, m, m);
  simdgroup_store(m, y, 8);
  simdgroup_store(m, s, 8);
  const half h = x[tid.x] * (half)2.0f;
  const float2 f = float2(half2(h, h));
  if ((int)tid.x < n) y[tid.x] = f.x + s[tid.x];
}
`
	for _, m := range Modes {
		if err := c.CheckText(m, "valid", src); err != nil {
			t.Errorf("%s check: %v", m, err)
		}
	}
}

// A batch keeps candidates apart: each kernel is renamed (OpenCL rejects
// two kernels of one name in a translation unit, whatever their
// namespaces), a candidate's macros are gone after it, and an error names
// its candidate.
func TestBatch(t *testing.T) {
	c := newChecker(t)
	kernel := func(def, use string) string {
		return "// k\n" + head + def + "kernel void kt_k(device float* y [[buffer(0)]]) { y[0] = " + use + "; }\n"
	}
	a := Source{Name: "a", Func: "kt_k", Text: kernel("#define ONLY_A 1.0f\n", "ONLY_A")}
	b := Source{Name: "b", Func: "kt_k", Text: kernel("", "2.0f")}
	for _, m := range Modes {
		if err := c.Check(m, []Source{a, b}); err != nil {
			t.Errorf("%s: two candidates with one kernel name: %v", m, err)
		}
	}
	unrenamed := []Source{{Name: "a", Text: a.Text}, {Name: "b", Text: b.Text}}
	if err := c.Check(AddressSpaces, unrenamed); err == nil || !strings.Contains(err.Error(), "redefinition of 'kt_k'") {
		t.Errorf("without renaming, OpenCL should reject the second kt_k: %v", err)
	}
	leak := Source{Name: "leaky", Func: "kt_k", Text: kernel("", "ONLY_A")}
	for _, m := range Modes {
		err := c.Check(m, []Source{a, b, leak})
		if err == nil {
			t.Errorf("%s: a macro of candidate a reached candidate leaky", m)
			continue
		}
		if !strings.Contains(err.Error(), "[leaky] ") || !strings.Contains(err.Error(), "ONLY_A") {
			t.Errorf("%s: the error does not name the candidate: %v", m, err)
		}
	}
	if err := c.Check(Syntax, []Source{{Name: "late", Text: "#define N 64\n" + head}}); err == nil || !strings.Contains(err.Error(), "late: line 1: #define N before") {
		t.Errorf("a batch must refuse a #define before the include (hoisting it would hide the defect): %v", err)
	}
}

// CheckAll splits into batches, runs them all and reports every failing one.
func TestCheckAll(t *testing.T) {
	c := newChecker(t)
	var srcs []Source
	for i := range 7 {
		use := "1.0f"
		if i == 5 {
			use = "undeclared_thing"
		}
		srcs = append(srcs, Source{Name: "c" + string(rune('0'+i)), Func: "kt_k",
			Text: head + "kernel void kt_k(device float* y [[buffer(0)]]) { y[0] = " + use + "; }\n"})
	}
	runs, err := c.CheckAll(AddressSpaces, srcs, 3)
	if runs != 3 {
		t.Errorf("%d clang runs for 7 sources in batches of 3, want 3", runs)
	}
	if err == nil || !strings.Contains(err.Error(), "[c5] ") {
		t.Fatalf("want the error of c5: %v", err)
	}
	if runs, err := c.CheckAll(AddressSpaces, srcs[:5], 2); err != nil || runs != 3 {
		t.Fatalf("%d runs, %v", runs, err)
	}
}
