package mslstd

import (
	"fmt"
	"sort"
	"strings"
)

// Kind is the shape of a function's overloads.
type Kind int

// The kinds of entry. F is every float scalar type (float, half, bfloat
// where __HAVE_BFLOAT__) and, for the element-wise kinds, the float
// vectors; I is every integer scalar type.
const (
	F1       Kind = iota // F f(F)
	F2                   // F f(F, F)
	F3                   // F f(F, F, F)
	B1                   // bool f(F)
	B2                   // bool f(F, F)
	I1                   // I f(I)
	I2                   // I f(I, I)
	I3                   // I f(I, I, I)
	FInt                 // F f(F, int): ldexp
	FRef                 // F f(F, thread F&): modf, sincos
	FIRef                // F f(F, thread int&): frexp
	IntF                 // int f(F): ilogb
	Sel                  // T select(T, T, bool) for every scalar type
	GeoS1                // S f(V): length of a float vector
	GeoS2                // S f(V, V): dot, distance
	GeoV1                // V f(V): normalize
	GeoV2                // V f(V, V): reflect
	GeoV3                // V f(V, V, V): faceforward
	GeoVS                // V f(V, V, S): refract
	SIMD1                // template T f(T): SIMD-group and quad-group reductions, scans, broadcast_first
	SIMDLane             // template T f(T, ushort): shuffles, broadcast
	SIMDBool             // bool f(bool): all, any
	SIMDNone             // bool f(): simd_is_first
)

// Entry is one function of the table.
type Entry struct {
	Name string
	Kind Kind
	// Impl is the emulation's float expression of x, y, z (the arguments
	// converted to float) or, for integer kinds, of the arguments a, b, c
	// of type T; empty for the kinds whose emulation is written by hand
	// (SIMD-group functions) or derived (geometry).
	Impl string
	// Fast: the function is also in metal::fast and metal::precise (float
	// scalars and vectors).
	Fast bool
}

// Entries is the table: Apple's Metal Shading Language specification,
// sections 6.2 (common), 6.4 (geometric), 6.5 (integer), 6.6 (math,
// metal::fast and metal::precise), 6.7 (relational) and 6.9.1 (SIMD-group
// and quad-group functions).
var Entries = []Entry{
	// Math, one argument.
	{"acos", F1, "std::acos(x)", true},
	{"acosh", F1, "std::acosh(x)", true},
	{"asin", F1, "std::asin(x)", true},
	{"asinh", F1, "std::asinh(x)", true},
	{"atan", F1, "std::atan(x)", true},
	{"atanh", F1, "std::atanh(x)", true},
	{"ceil", F1, "std::ceil(x)", true},
	{"cos", F1, "std::cos(x)", true},
	{"cosh", F1, "std::cosh(x)", true},
	{"cospi", F1, "std::cos(x * 3.14159265358979323846f)", true},
	{"exp", F1, "std::exp(x)", true},
	{"exp10", F1, "std::pow(10.0f, x)", true},
	{"exp2", F1, "std::exp2(x)", true},
	{"fabs", F1, "std::fabs(x)", true},
	{"abs", F1, "std::fabs(x)", false},
	{"floor", F1, "std::floor(x)", true},
	{"fract", F1, "std::fmin(x - std::floor(x), 0x1.fffffep-1f)", true},
	{"log", F1, "std::log(x)", true},
	{"log10", F1, "std::log10(x)", true},
	{"log2", F1, "std::log2(x)", true},
	{"rint", F1, "std::nearbyint(x)", true},
	{"round", F1, "std::round(x)", true},
	{"rsqrt", F1, "1.0f / std::sqrt(x)", true},
	{"sin", F1, "std::sin(x)", true},
	{"sinh", F1, "std::sinh(x)", true},
	{"sinpi", F1, "std::sin(x * 3.14159265358979323846f)", true},
	{"sqrt", F1, "std::sqrt(x)", true},
	{"tan", F1, "std::tan(x)", true},
	{"tanh", F1, "std::tanh(x)", true},
	{"tanpi", F1, "std::tan(x * 3.14159265358979323846f)", true},
	{"trunc", F1, "std::trunc(x)", true},
	{"saturate", F1, "std::fmin(std::fmax(x, 0.0f), 1.0f)", false},
	{"sign", F1, "(x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : std::isnan(x) ? 0.0f : x)", false},
	// Math, two and three arguments.
	{"atan2", F2, "std::atan2(x, y)", true},
	{"copysign", F2, "std::copysign(x, y)", false},
	{"divide", F2, "x / y", true},
	{"fdim", F2, "std::fdim(x, y)", true},
	{"fmax", F2, "std::fmax(x, y)", true},
	{"fmin", F2, "std::fmin(x, y)", true},
	{"fmod", F2, "std::fmod(x, y)", true},
	{"max", F2, "std::fmax(x, y)", true},
	{"min", F2, "std::fmin(x, y)", true},
	{"nextafter", F2, "std::nextafter(x, y)", false},
	{"pow", F2, "std::pow(x, y)", true},
	{"powr", F2, "std::pow(x, y)", true},
	{"step", F2, "(y < x ? 0.0f : 1.0f)", false},
	{"clamp", F3, "std::fmin(std::fmax(x, y), z)", true},
	{"fma", F3, "std::fma(x, y, z)", true},
	{"fmax3", F3, "std::fmax(std::fmax(x, y), z)", true},
	{"fmedian3", F3, "std::fmax(std::fmin(x, y), std::fmin(std::fmax(x, y), z))", true},
	{"fmin3", F3, "std::fmin(std::fmin(x, y), z)", true},
	{"mix", F3, "x + (y - x) * z", false},
	{"smoothstep", F3, "[](float t) { return t * t * (3.0f - 2.0f * t); }(std::fmin(std::fmax((z - x) / (y - x), 0.0f), 1.0f))", false},
	{"ldexp", FInt, "std::ldexp(x, n)", true},
	{"frexp", FIRef, "std::frexp(x, &n)", true},
	{"modf", FRef, "std::modf(x, &r)", true},
	{"sincos", FRef, "(r = std::cos(x), std::sin(x))", true},
	{"ilogb", IntF, "std::ilogb(x)", true},
	// Relational.
	{"isfinite", B1, "std::isfinite(x)", false},
	{"isinf", B1, "std::isinf(x)", false},
	{"isnan", B1, "std::isnan(x)", false},
	{"isnormal", B1, "std::isnormal(x)", false},
	{"signbit", B1, "std::signbit(x)", false},
	{"isordered", B2, "!std::isnan(x) && !std::isnan(y)", false},
	{"isunordered", B2, "std::isnan(x) || std::isnan(y)", false},
	{"select", Sel, "", false},
	// Integer.
	{"abs", I1, "T(a < 0 ? -a : a)", false},
	{"clz", I1, "T(kt_clz(a))", false},
	{"ctz", I1, "T(kt_ctz(a))", false},
	{"popcount", I1, "T(std::popcount(kt_u(a)))", false},
	{"reverse_bits", I1, "T(kt_rev(a))", false},
	{"absdiff", I2, "T(a > b ? a - b : b - a)", false},
	{"addsat", I2, "kt_sat<T>((long long)a + (long long)b)", false},
	{"hadd", I2, "T(((long long)a + (long long)b) >> 1)", false},
	{"max", I2, "T(a > b ? a : b)", false},
	{"min", I2, "T(a < b ? a : b)", false},
	{"mul24", I2, "T(a * b)", false},
	{"mulhi", I2, "kt_mulhi(a, b)", false},
	{"rhadd", I2, "T(((long long)a + (long long)b + 1) >> 1)", false},
	{"rotate", I2, "kt_rot(a, b)", false},
	{"subsat", I2, "kt_sat<T>((long long)a - (long long)b)", false},
	{"clamp", I3, "T(a < b ? b : a > c ? c : a)", false},
	{"mad24", I3, "T(a * b + c)", false},
	{"madhi", I3, "T(kt_mulhi(a, b) + c)", false},
	{"madsat", I3, "kt_sat<T>((long long)a * (long long)b + (long long)c)", false},
	{"max3", I3, "T(std::max(std::max(a, b), c))", false},
	{"median3", I3, "T(std::max(std::min(a, b), std::min(std::max(a, b), c)))", false},
	{"min3", I3, "T(std::min(std::min(a, b), c))", false},
	// Geometric (float vectors).
	{"length", GeoS1, "", true},
	{"length_squared", GeoS1, "", false},
	{"dot", GeoS2, "", false},
	{"distance", GeoS2, "", true},
	{"distance_squared", GeoS2, "", false},
	{"normalize", GeoV1, "", true},
	{"reflect", GeoV2, "", false},
	{"faceforward", GeoV3, "", false},
	{"refract", GeoVS, "", false},
	// SIMD-group and quad-group functions (the emulation's are written by
	// hand in internal/mslemu/include/metal_stdlib).
	{"simd_sum", SIMD1, "", false},
	{"simd_product", SIMD1, "", false},
	{"simd_min", SIMD1, "", false},
	{"simd_max", SIMD1, "", false},
	{"simd_and", SIMD1, "", false},
	{"simd_or", SIMD1, "", false},
	{"simd_xor", SIMD1, "", false},
	{"simd_broadcast_first", SIMD1, "", false},
	{"simd_prefix_inclusive_sum", SIMD1, "", false},
	{"simd_prefix_exclusive_sum", SIMD1, "", false},
	{"simd_prefix_inclusive_product", SIMD1, "", false},
	{"simd_prefix_exclusive_product", SIMD1, "", false},
	{"simd_broadcast", SIMDLane, "", false},
	{"simd_shuffle", SIMDLane, "", false},
	{"simd_shuffle_up", SIMDLane, "", false},
	{"simd_shuffle_down", SIMDLane, "", false},
	{"simd_shuffle_xor", SIMDLane, "", false},
	{"simd_shuffle_rotate_up", SIMDLane, "", false},
	{"simd_shuffle_rotate_down", SIMDLane, "", false},
	{"simd_all", SIMDBool, "", false},
	{"simd_any", SIMDBool, "", false},
	{"simd_is_first", SIMDNone, "", false},
	{"quad_sum", SIMD1, "", false},
	{"quad_product", SIMD1, "", false},
	{"quad_min", SIMD1, "", false},
	{"quad_max", SIMD1, "", false},
	{"quad_and", SIMD1, "", false},
	{"quad_or", SIMD1, "", false},
	{"quad_xor", SIMD1, "", false},
	{"quad_broadcast_first", SIMD1, "", false},
	{"quad_prefix_inclusive_sum", SIMD1, "", false},
	{"quad_prefix_exclusive_sum", SIMD1, "", false},
	{"quad_broadcast", SIMDLane, "", false},
	{"quad_shuffle", SIMDLane, "", false},
	{"quad_shuffle_up", SIMDLane, "", false},
	{"quad_shuffle_down", SIMDLane, "", false},
	{"quad_shuffle_xor", SIMDLane, "", false},
	{"quad_all", SIMDBool, "", false},
	{"quad_any", SIMDBool, "", false},
	{"quad_is_first", SIMDNone, "", false},
}

// Float types: the scalars and the vectors both stand-ins define.
var (
	floatScalars = []string{"float", "half"}
	floatVectors = []string{"float2", "float4", "half2", "half4"}
	intScalars   = []string{"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong"}
)

// scalarOf is a vector's element type.
func scalarOf(v string) string { return strings.TrimRight(v, "234") }

// Names lists the table's function names, sorted, once each.
func Names() []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range Entries {
		if !seen[e.Name] {
			seen[e.Name] = true
			out = append(out, e.Name)
		}
	}
	sort.Strings(out)
	return out
}

// elementwise reports whether k's float overloads extend to vectors.
func elementwise(k Kind) bool { return k == F1 || k == F2 || k == F3 }

// bfloatGuard keeps text to Metal 3.1 and later, where bfloat exists; a
// header compiled without a version (__METAL_VERSION__) has it.
func bfloatGuard(text string) string {
	if text == "" {
		return ""
	}
	return "#if !defined(__METAL_VERSION__) || __METAL_VERSION__ >= 310\n" + text + "#endif\n"
}

// floatDecls are the declarations of a float entry for the types given,
// in the current namespace.
func floatDecls(e Entry, types []string) string {
	var b strings.Builder
	for _, t := range types {
		s := scalarOf(t)
		switch e.Kind {
		case F1:
			fmt.Fprintf(&b, "%s %s(%s x);\n", t, e.Name, t)
		case F2:
			fmt.Fprintf(&b, "%s %s(%s x, %s y);\n", t, e.Name, t, t)
		case F3:
			fmt.Fprintf(&b, "%s %s(%s x, %s y, %s z);\n", t, e.Name, t, t, t)
		case B1:
			fmt.Fprintf(&b, "bool %s(%s x);\n", e.Name, t)
		case B2:
			fmt.Fprintf(&b, "bool %s(%s x, %s y);\n", e.Name, t, t)
		case FInt:
			fmt.Fprintf(&b, "%s %s(%s x, int n);\n", t, e.Name, t)
		case FRef:
			fmt.Fprintf(&b, "%s %s(%s x, thread %s& r);\n", t, e.Name, t, t)
		case FIRef:
			fmt.Fprintf(&b, "%s %s(%s x, thread int& n);\n", t, e.Name, t)
		case IntF:
			fmt.Fprintf(&b, "int %s(%s x);\n", e.Name, t)
		case GeoS1:
			fmt.Fprintf(&b, "%s %s(%s x);\n", s, e.Name, t)
		case GeoS2:
			fmt.Fprintf(&b, "%s %s(%s x, %s y);\n", s, e.Name, t, t)
		case GeoV1:
			fmt.Fprintf(&b, "%s %s(%s x);\n", t, e.Name, t)
		case GeoV2:
			fmt.Fprintf(&b, "%s %s(%s x, %s y);\n", t, e.Name, t, t)
		case GeoV3:
			fmt.Fprintf(&b, "%s %s(%s x, %s y, %s z);\n", t, e.Name, t, t, t)
		case GeoVS:
			fmt.Fprintf(&b, "%s %s(%s x, %s y, %s eta);\n", t, e.Name, t, t, s)
		}
	}
	return b.String()
}

// typesOf are the types of a float entry: scalars, and vectors where the
// kind is element-wise or geometric; bfloat's apart (guarded).
func typesOf(k Kind) (plain, bf []string) {
	geo := k >= GeoS1 && k <= GeoVS
	if !geo {
		plain = append(plain, floatScalars...)
		bf = append(bf, "bfloat")
	}
	if geo || elementwise(k) {
		plain = append(plain, floatVectors...)
		bf = append(bf, "bfloat2", "bfloat4")
	}
	return plain, bf
}

// isFloatKind reports whether k's overloads are over the float types.
func isFloatKind(k Kind) bool {
	return k <= B2 || (k >= FInt && k <= IntF) || (k >= GeoS1 && k <= GeoVS)
}

// CheckHeader is the declarations the clang check's stand-ins include
// (shim/cpp and shim/opencl alike): every entry's overloads, in namespace
// metal and, for the Fast entries, metal::fast and metal::precise.
func CheckHeader() string {
	var b strings.Builder
	b.WriteString(generated)
	b.WriteString(`// Declarations of the Metal standard library functions for the clang check:
// the overloads MSL has, so that a call Metal finds ambiguous (min(uint, int),
// max(half, float)) is ambiguous here too.
#pragma once
namespace metal {
typedef unsigned char uchar;
`)
	var fast strings.Builder
	for _, e := range Entries {
		switch {
		case isFloatKind(e.Kind):
			plain, bf := typesOf(e.Kind)
			b.WriteString(floatDecls(e, plain))
			b.WriteString(bfloatGuard(floatDecls(e, bf)))
			if e.Fast {
				fast.WriteString(floatDecls(e, append([]string{"float"}, floatVectorsOf("float")...)))
			}
		case e.Kind >= I1 && e.Kind <= I3:
			for _, t := range intScalars {
				args := []string{t + " a", t + " b", t + " c"}[:int(e.Kind-I1)+1]
				fmt.Fprintf(&b, "%s %s(%s);\n", t, e.Name, strings.Join(args, ", "))
			}
		case e.Kind == Sel:
			for _, t := range append(append(append([]string{}, floatScalars...), intScalars...), "bool") {
				fmt.Fprintf(&b, "%s select(%s a, %s b, bool c);\n", t, t, t)
			}
			b.WriteString(bfloatGuard("bfloat select(bfloat a, bfloat b, bool c);\n"))
		case e.Kind == SIMD1:
			fmt.Fprintf(&b, "template <typename T> T %s(T x);\n", e.Name)
		case e.Kind == SIMDLane:
			fmt.Fprintf(&b, "template <typename T> T %s(T x, ushort lane);\n", e.Name)
		case e.Kind == SIMDBool:
			fmt.Fprintf(&b, "bool %s(bool x);\n", e.Name)
		case e.Kind == SIMDNone:
			fmt.Fprintf(&b, "bool %s();\n", e.Name)
		}
	}
	// precise:: names the same declarations: off a Mac the two differ in
	// accuracy only, which a declaration does not say.
	b.WriteString("namespace fast {\n" + fast.String() + "}  // namespace fast\n")
	b.WriteString("namespace precise {\nusing namespace fast;\n}  // namespace precise\n")
	b.WriteString("}  // namespace metal\n")
	return b.String()
}

func floatVectorsOf(s string) []string {
	var out []string
	for _, v := range floatVectors {
		if scalarOf(v) == s {
			out = append(out, v)
		}
	}
	return out
}

const generated = "// Code generated by internal/mslstd (go test ./internal/mslstd -update); DO NOT EDIT.\n"

// emuFloatTypes are the emulation's float scalars (bfloat guarded).
var emuFloatTypes = []string{"float", "half", "bfloat"}

// emuFloat is the emulation's overload of a float entry for scalar type t:
// the arguments converted to float, Impl evaluated, the result rounded to t.
func emuFloat(e Entry, t string) string {
	conv := func(names ...string) string {
		var b strings.Builder
		for _, n := range names {
			fmt.Fprintf(&b, " const float %s = float(%s_);", n, n)
		}
		return b.String()
	}
	switch e.Kind {
	case F1:
		return fmt.Sprintf("inline %s %s(%s x_) {%s return %s(%s); }\n", t, e.Name, t, conv("x"), t, e.Impl)
	case F2:
		return fmt.Sprintf("inline %s %s(%s x_, %s y_) {%s return %s(%s); }\n", t, e.Name, t, t, conv("x", "y"), t, e.Impl)
	case F3:
		return fmt.Sprintf("inline %s %s(%s x_, %s y_, %s z_) {%s return %s(%s); }\n", t, e.Name, t, t, t, conv("x", "y", "z"), t, e.Impl)
	case B1:
		return fmt.Sprintf("inline bool %s(%s x_) {%s return %s; }\n", e.Name, t, conv("x"), e.Impl)
	case B2:
		return fmt.Sprintf("inline bool %s(%s x_, %s y_) {%s return %s; }\n", e.Name, t, t, conv("x", "y"), e.Impl)
	case FInt:
		return fmt.Sprintf("inline %s %s(%s x_, int n) {%s return %s(%s); }\n", t, e.Name, t, conv("x"), t, e.Impl)
	case FIRef:
		return fmt.Sprintf("inline %s %s(%s x_, int& n) {%s return %s(%s); }\n", t, e.Name, t, conv("x"), t, e.Impl)
	case FRef:
		return fmt.Sprintf("inline %s %s(%s x_, %s& r_) {%s float r; const float out = %s; r_ = %s(r); return %s(out); }\n",
			t, e.Name, t, t, conv("x"), e.Impl, t, t)
	case IntF:
		return fmt.Sprintf("inline int %s(%s x_) {%s return %s; }\n", e.Name, t, conv("x"), e.Impl)
	}
	return ""
}

// emuVector is the element-wise vector overload of a float entry.
func emuVector(e Entry) string {
	switch e.Kind {
	case F1:
		return fmt.Sprintf("template <typename T, int N> kt_vec<T, N> %s(kt_vec<T, N> x) { for (int i = 0; i < N; ++i) x[i] = %s(x[i]); return x; }\n", e.Name, e.Name)
	case F2:
		return fmt.Sprintf("template <typename T, int N> kt_vec<T, N> %s(kt_vec<T, N> x, kt_vec<T, N> y) { for (int i = 0; i < N; ++i) x[i] = %s(x[i], y[i]); return x; }\n", e.Name, e.Name)
	case F3:
		return fmt.Sprintf("template <typename T, int N> kt_vec<T, N> %s(kt_vec<T, N> x, kt_vec<T, N> y, kt_vec<T, N> z) { for (int i = 0; i < N; ++i) x[i] = %s(x[i], y[i], z[i]); return x; }\n", e.Name, e.Name)
	}
	return ""
}

// emuGeometry are the geometric functions over the emulation's vectors.
var emuGeometry = map[string]string{
	"dot":              "template <typename T, int N> T dot(kt_vec<T, N> x, kt_vec<T, N> y) { float s = 0; for (int i = 0; i < N; ++i) s += float(x[i]) * float(y[i]); return T(s); }\n",
	"length_squared":   "template <typename T, int N> T length_squared(kt_vec<T, N> x) { return dot(x, x); }\n",
	"length":           "template <typename T, int N> T length(kt_vec<T, N> x) { return T(std::sqrt(float(dot(x, x)))); }\n",
	"distance_squared": "template <typename T, int N> T distance_squared(kt_vec<T, N> x, kt_vec<T, N> y) { for (int i = 0; i < N; ++i) x[i] = T(float(x[i]) - float(y[i])); return dot(x, x); }\n",
	"distance":         "template <typename T, int N> T distance(kt_vec<T, N> x, kt_vec<T, N> y) { return T(std::sqrt(float(distance_squared(x, y)))); }\n",
	"normalize":        "template <typename T, int N> kt_vec<T, N> normalize(kt_vec<T, N> x) { const float l = float(length(x)); for (int i = 0; i < N; ++i) x[i] = T(float(x[i]) / l); return x; }\n",
	"reflect":          "template <typename T, int N> kt_vec<T, N> reflect(kt_vec<T, N> i, kt_vec<T, N> n) { const float d = 2 * float(dot(n, i)); for (int k = 0; k < N; ++k) i[k] = T(float(i[k]) - d * float(n[k])); return i; }\n",
	"faceforward":      "template <typename T, int N> kt_vec<T, N> faceforward(kt_vec<T, N> n, kt_vec<T, N> i, kt_vec<T, N> r) { if (float(dot(r, i)) < 0) return n; for (int k = 0; k < N; ++k) n[k] = T(-float(n[k])); return n; }\n",
	"refract": `template <typename T, int N> kt_vec<T, N> refract(kt_vec<T, N> i, kt_vec<T, N> n, T eta_) {
  const float eta = float(eta_), d = float(dot(n, i)), k = 1 - eta * eta * (1 - d * d);
  for (int j = 0; j < N; ++j) i[j] = T(k < 0 ? 0.0f : eta * float(i[j]) - (eta * d + std::sqrt(k)) * float(n[j]));
  return i;
}
`,
}

// emuIntHelpers are what the integer entries' Impl expressions call.
const emuIntHelpers = `template <typename T> constexpr auto kt_u(T a) { return static_cast<std::make_unsigned_t<T>>(a); }
template <typename T> constexpr int kt_clz(T a) { return std::countl_zero(kt_u(a)); }
template <typename T> constexpr int kt_ctz(T a) { return std::countr_zero(kt_u(a)); }
template <typename T> constexpr T kt_rev(T a) {
  auto u = kt_u(a);
  decltype(u) r = 0;
  for (unsigned i = 0; i < sizeof(T) * 8; ++i, u >>= 1) r = decltype(u)((r << 1) | (u & 1));
  return T(r);
}
template <typename T> constexpr T kt_sat(long long v) {
  if constexpr (sizeof(T) < 8) {
    return T(std::clamp<long long>(v, std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
  } else {
    return T(v);  // 64-bit saturation needs 128-bit arithmetic; the emulation wraps
  }
}
template <typename T> constexpr T kt_mulhi(T a, T b) {
  if constexpr (sizeof(T) < 8) {
    return T(((long long)a * (long long)b) >> (sizeof(T) * 8));
  } else {
    return T(((__int128)a * (__int128)b) >> 64);
  }
}
template <typename T> constexpr T kt_rot(T a, T b) {
  const unsigned w = sizeof(T) * 8, s = unsigned(kt_u(b)) % w;
  return s == 0 ? a : T((kt_u(a) << s) | (kt_u(a) >> (w - s)));
}
`

// EmuHeader is the emulation's implementation of every entry but the
// SIMD-group functions (written by hand beside it), in namespace metal,
// with metal::fast and metal::precise holding the Fast entries.
func EmuHeader() string {
	var b strings.Builder
	b.WriteString(generated)
	b.WriteString(`// The Metal standard library functions for the CPU emulation: each float
// overload computes in float and rounds to its type, as Apple GPUs do for
// half; vectors apply it element-wise.
#pragma once
namespace metal {
`)
	b.WriteString(emuIntHelpers)
	vec := map[string]bool{}
	var fast []string
	for _, e := range Entries {
		switch {
		case isFloatKind(e.Kind) && e.Kind < GeoS1:
			for _, t := range emuFloatTypes {
				if t == "bfloat" {
					b.WriteString(bfloatGuard(emuFloat(e, t)))
				} else {
					b.WriteString(emuFloat(e, t))
				}
			}
			key := fmt.Sprintf("%s/%d", e.Name, e.Kind)
			if elementwise(e.Kind) && !vec[key] {
				vec[key] = true
				b.WriteString(emuVector(e))
			}
		case e.Kind >= GeoS1 && e.Kind <= GeoVS:
			b.WriteString(emuGeometry[e.Name])
		case e.Kind >= I1 && e.Kind <= I3:
			for _, t := range intScalars {
				if e.Name == "abs" && t == "int" {
					continue // the C library's ::abs(int), which the emulation includes
				}
				params := []string{t + " a", t + " b", t + " c"}[:int(e.Kind-I1)+1]
				fmt.Fprintf(&b, "inline %s %s(%s) { using T = %s; return %s; }\n", t, e.Name, strings.Join(params, ", "), t, e.Impl)
			}
		case e.Kind == Sel:
			b.WriteString("template <typename T> T select(T a, T b, bool c) { return c ? b : a; }\n")
		}
		if e.Fast && !contains(fast, e.Name) {
			fast = append(fast, e.Name)
		}
	}
	// The emulation computes both in float: precise:: is fast::.
	b.WriteString("namespace fast {\n")
	for _, n := range fast {
		fmt.Fprintf(&b, "using metal::%s;\n", n)
	}
	b.WriteString("}  // namespace fast\nnamespace precise {\nusing namespace fast;\n}  // namespace precise\n")
	b.WriteString("}  // namespace metal\n")
	return b.String()
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
