package mslcheck

import (
	"strings"
	"testing"
)

// Each form Metal rejects is found, on its line, and a valid neighbour
// (the same code as Metal allows it) passes.
func TestLint(t *testing.T) {
	for _, tt := range []struct {
		name, bad, good, want string
		line                  int
	}{
		{"kernel pointer parameter without an address space",
			"kernel void k(float* y [[buffer(0)]]) { y[0] = 1.0f; }",
			"kernel void k(device float* y [[buffer(0)]]) { y[0] = 1.0f; }",
			"parameter pointer without an address space", 3},
		{"function pointer parameter without an address space",
			"inline float first(const float* p) { return p[0]; }",
			"inline float first(const device float* p) { return p[0]; }",
			"parameter pointer without an address space", 3},
		{"kernel reference parameter without an address space",
			"kernel void k(device float* y [[buffer(0)]], const int& n [[buffer(1)]]) { y[0] = n; }",
			"kernel void k(device float* y [[buffer(0)]], constant int& n [[buffer(1)]]) { y[0] = n; }",
			"parameter reference without an address space", 3},
		{"local pointer without an address space",
			"kernel void k(device float* y [[buffer(0)]]) {\n  float v = 1.0f;\n  float* p = &v;\n  y[0] = *p;\n}",
			"kernel void k(device float* y [[buffer(0)]]) {\n  float v = 1.0f;\n  thread float* p = &v;\n  y[0] = *p;\n}",
			"variable pointer without an address space", 5},
		{"struct member pointer without an address space",
			"struct S { float* p; };",
			"struct S { device float* p; };",
			"member pointer without an address space", 3},
		{"double",
			"kernel void k(device float* y [[buffer(0)]]) {\n  double d = 1.0;\n  y[0] = d;\n}",
			"kernel void k(device float* y [[buffer(0)]]) {\n  float d = 1.0;\n  y[0] = d;\n}",
			"double: Metal has no 64-bit floating point type", 4},
		{"direct recursion",
			"inline int f(int n) {\n  return n <= 0 ? 0 : f(n - 1);\n}",
			"inline int f(int n) {\n  int r = 0;\n  for (; n > 0; n--) r += 0;\n  return r;\n}",
			"recursion (f → f)", 4},
		{"recursion through another function",
			"inline int g(int n);\ninline int f(int n) { return g(n); }\ninline int g(int n) { return n > 0 ? f(n - 1) : 0; }",
			"inline int g(int n);\ninline int f(int n) { return g(n); }\ninline int g(int n) { return n > 0 ? n - 1 : 0; }",
			"recursion (f → g → f)", 5},
		{"misspelled attribute",
			"kernel void k(device float* y [[buffer(0)]], uint i [[thread_positon_in_grid]]) { y[i] = 1.0f; }",
			"kernel void k(device float* y [[buffer(0)]], uint i [[thread_position_in_grid]]) { y[i] = 1.0f; }",
			"unknown attribute [[thread_positon_in_grid]] (did you mean [[thread_position_in_grid]]?)", 3},
		{"misspelled kernel attribute",
			"[[kernal]] void k(device float* y [[buffer(0)]]) { y[0] = 1.0f; }",
			"[[kernel]] void k(device float* y [[buffer(0)]]) { y[0] = 1.0f; }",
			"unknown attribute [[kernal]]", 3},
		{"buffer index above 30",
			"kernel void k(device float* y [[buffer(31)]]) { y[0] = 1.0f; }",
			"kernel void k(device float* y [[buffer(30)]]) { y[0] = 1.0f; }",
			"[[buffer(31)]]: Metal's buffer argument table has indices 0 … 30", 3},
		{"repeated buffer index",
			"kernel void k(device float* y [[buffer(0)]],\n  device const float* x [[buffer(0)]]) { y[0] = x[0]; }",
			"kernel void k(device float* y [[buffer(0)]],\n  device const float* x [[buffer(1)]]) { y[0] = x[0]; }",
			"[[buffer(0)]] is also the index of the parameter on line 3", 4},
		{"program-scope variable outside constant",
			"float scale = 2.0f;\nkernel void k(device float* y [[buffer(0)]]) { y[0] = scale; }",
			"constant float scale = 2.0f;\nkernel void k(device float* y [[buffer(0)]]) { y[0] = scale; }",
			"a program-scope variable must be in the constant address space", 3},
		{"program-scope constexpr outside constant",
			"namespace n { constexpr int N = 4; }\nkernel void k(device float* y [[buffer(0)]]) { y[0] = n::N; }",
			"namespace n { constexpr constant int N = 4; }\nkernel void k(device float* y [[buffer(0)]]) { y[0] = n::N; }",
			"a program-scope variable must be in the constant address space", 3},
		{"program-scope threadgroup array",
			"threadgroup float tile[32];\nkernel void k(device float* y [[buffer(0)]]) { y[0] = tile[0]; }",
			"kernel void k(device float* y [[buffer(0)]]) { threadgroup float tile[32]; y[0] = tile[0]; }",
			"a program-scope variable must be in the constant address space", 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			diags := Lint(head + tt.bad + "\n")
			found := false
			for _, d := range diags {
				if strings.Contains(d.Msg, tt.want) && d.Line == tt.line {
					found = true
				}
			}
			if !found {
				t.Errorf("want %q on line %d; got %v", tt.want, tt.line, diags)
			}
			if diags := Lint(head + tt.good + "\n"); len(diags) != 0 {
				t.Errorf("the valid neighbour is rejected: %v", diags)
			}
		})
	}
}

// What Lint must not mistake for what Metal rejects: comments, strings,
// macros, templates, MLX's instantiations, members, multiplications.
func TestLintAccepts(t *testing.T) {
	src := head + `// float* p; double d; [[bufer(0)]]
/* float scale = 1; */
#define SCALE(x) ((x) * 2.0f)
#define DBL double
constant constexpr float k = 1.0f;
static constant constexpr const int n = 4;
constexpr sampler smp(coord::normalized);
typedef float T;
enum { BN = 8 };
struct S {
  device float* p;
  static constexpr constant int m = 2;
  S() = default;
  float get(thread const float& a) const { return a * 2.0f; }
};
template <typename U, int N = 4>
inline U twice(U a) { return a * U(2); }
template <typename IdxT = int64_t>
METAL_FUNC IdxT loc(IdxT elem, constant const int* shape, constant const int64_t* strides, int ndim) {
  IdxT l = 0;
  for (int d = ndim - 1; d >= 0; --d) { l += (elem % shape[d]) * IdxT(strides[d]); elem /= shape[d]; }
  return l;
}
template <typename T2>
[[kernel]] void mk(device T2* y [[buffer(0)]], const constant T2& s [[buffer(1)]],
    uint3 tid [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
  threadgroup float tile[32];
  const float a = 2.0f, b = 3.0f;
  float c = a * b;
  device T2* out = y + tid.x;
  for (thread float* q = tile; q < tile + 1; q++) *q = c;
  out[0] = twice(s) * T2(SCALE(c)) + T2(lane);
}
template [[host_name("mk_float")]] [[kernel]] decltype(mk<float>) mk<float>;
kernel void k2(device float* y [[buffer(0)]], device const float* x [[buffer(30)]],
    uint i [[thread_position_in_grid]], uint n [[threads_per_grid]]) {
  const char* msg = "a string";
  [[maybe_unused]] float z = x[i];
  y[i] = max(x[i], 0.0f) + k + float(n);
}
`
	// The const char* above is a pointer without an address space: the one finding.
	diags := Lint(src)
	if len(diags) != 1 || !strings.Contains(diags[0].Msg, "variable pointer") {
		t.Errorf("want only the const char* finding; got %v", diags)
	}
}

// The checker defines __METAL_VERSION__ and, from 3.1 on, __HAVE_BFLOAT__,
// as Apple's compiler does for the version.
func TestVersionMacros(t *testing.T) {
	cc := Require(t)
	src := head + `#if __METAL_VERSION__ != WANT_V
#error wrong __METAL_VERSION__
#endif
#if defined(__HAVE_BFLOAT__) != WANT_B
#error wrong __HAVE_BFLOAT__
#endif
`
	for _, tt := range []struct {
		v, want, bf string
	}{{"3.0", "300", "0"}, {"3.1", "310", "1"}, {"3.2", "320", "1"}, {"4.0", "400", "1"}} {
		c, err := NewVersion(cc, t.TempDir(), tt.v)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range Modes {
			text := strings.NewReplacer("WANT_V", tt.want, "WANT_B", tt.bf).Replace(src)
			if err := c.CheckText(m, tt.v, text); err != nil {
				t.Errorf("Metal %s, %s check: %v", tt.v, m, err)
			}
			mutated := strings.NewReplacer("WANT_V", tt.want+"1", "WANT_B", tt.bf).Replace(src)
			if err := c.CheckText(m, tt.v, mutated); err == nil {
				t.Errorf("Metal %s, %s check: a wrong __METAL_VERSION__ passes", tt.v, m)
			}
		}
	}
	for _, bad := range []string{"2.4", "3", "3.1.0", ""} {
		if _, err := NewVersion(cc, t.TempDir(), bad); err == nil || !strings.Contains(err.Error(), "allowed are 3.0, 3.1, 3.2, 4.0") {
			t.Errorf("version %q: %v", bad, err)
		}
	}
}

// Lint's findings fail a check: batched, named by candidate and line;
// alone, as clang formats its errors (path:line:col: error: ...).
func TestCheckReportsLint(t *testing.T) {
	c := newChecker(t)
	good := head + "kernel void kt_k(device float* y [[buffer(0)]]) { y[0] = 1.0f; }\n"
	bad := head + "kernel void kt_k(device float* y [[buffer(31)]]) { y[0] = 1.0f; }\n"
	if err := c.Check(Syntax, []Source{{Name: "good", Func: "kt_k", Text: good}}); err != nil {
		t.Fatal(err)
	}
	err := c.Check(Syntax, []Source{{Name: "good", Func: "kt_k", Text: good}, {Name: "bad", Func: "kt_k", Text: bad}})
	if err == nil || !strings.Contains(err.Error(), "[bad] line 3: error: [[buffer(31)]]") || strings.Contains(err.Error(), "[good]") {
		t.Errorf("batch: %v", err)
	}
	err = c.CheckText(AddressSpaces, "bad", bad)
	if err == nil || !strings.Contains(err.Error(), ".metal:3:1: error: [[buffer(31)]]") {
		t.Errorf("alone: %v", err)
	}
}
