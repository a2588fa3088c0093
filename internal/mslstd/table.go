package mslstd

//go:generate go run ./gen ../..

// Scalar is one MSL scalar type.
type Scalar struct {
	Name   string
	Float  bool // half, float, bfloat
	Int    bool // char .. ulong
	Bfloat bool // guarded by __HAVE_BFLOAT__
}

// Scalars are MSL's scalar types that have vectors, in declaration order.
var Scalars = []Scalar{
	{Name: "bool"},
	{Name: "char", Int: true}, {Name: "uchar", Int: true},
	{Name: "short", Int: true}, {Name: "ushort", Int: true},
	{Name: "int", Int: true}, {Name: "uint", Int: true},
	{Name: "long", Int: true}, {Name: "ulong", Int: true},
	{Name: "half", Float: true}, {Name: "float", Float: true},
	{Name: "bfloat", Float: true, Bfloat: true},
}

// Widths are the vector widths; 1 is the scalar.
var Widths = []int{1, 2, 3, 4}

// Type sets of the table's entries.
const (
	Floats   = "half float bfloat"
	Ints     = "char uchar short ushort int uint long ulong"
	Int32s   = "int uint"
	Numbers  = Floats + " " + Ints
	SIMDType = "half float bfloat char uchar short ushort int uint"
	SIMDInts = "char uchar short ushort int uint"
	Geometry = "half float bfloat"
)

// Func is one entry of the table: a function with its signature over a
// type T from Types (scalar and, with Vec, vectors of 2, 3 and 4).
//
// Sig is RET(ARG,...) in these letters: T the type, E its element type,
// B bool of T's width, I int of T's width, U the unsigned type of T's
// element and width, O thread T& (out), J thread I& (out), u ushort, n uint,
// b bool, v void.
type Func struct {
	Name  string
	NS    string // namespaces: "metal", or "metal fast precise"
	Sig   string
	Types string
	Vec   bool
	// Emu is the emulation's scalar body as a C++ expression of a, b, c
	// (computed in float for the float types, ending in a conversion to
	// the result type), or, prefixed "=", a whole function body for any
	// width (N, T, E defined).
	Emu string
	// Family groups entries in tests.
	Family string
	// VecOnly: no scalar form (geometric functions).
	VecOnly bool
	// Only3: cross takes 3-vectors only.
	Only3 bool
}

const mfp = "metal fast precise"

// Funcs is the table.
var Funcs = []Func{
	// Math (float types; fast and precise: float only, as Metal has them).
	{Name: "acos", NS: mfp, Sig: "T(T)", Emu: "std::acos(a)"},
	{Name: "acosh", NS: mfp, Sig: "T(T)", Emu: "std::acosh(a)"},
	{Name: "asin", NS: mfp, Sig: "T(T)", Emu: "std::asin(a)"},
	{Name: "asinh", NS: mfp, Sig: "T(T)", Emu: "std::asinh(a)"},
	{Name: "atan", NS: mfp, Sig: "T(T)", Emu: "std::atan(a)"},
	{Name: "atan2", NS: mfp, Sig: "T(T,T)", Emu: "std::atan2(a, b)"},
	{Name: "atanh", NS: mfp, Sig: "T(T)", Emu: "std::atanh(a)"},
	{Name: "ceil", NS: mfp, Sig: "T(T)", Emu: "std::ceil(a)"},
	{Name: "copysign", NS: mfp, Sig: "T(T,T)", Emu: "std::copysign(a, b)"},
	{Name: "cos", NS: mfp, Sig: "T(T)", Emu: "std::cos(a)"},
	{Name: "cosh", NS: mfp, Sig: "T(T)", Emu: "std::cosh(a)"},
	{Name: "cospi", NS: mfp, Sig: "T(T)", Emu: "std::cos(3.14159265358979323846 * a)"},
	{Name: "divide", NS: mfp, Sig: "T(T,T)", Emu: "a / b"},
	{Name: "exp", NS: mfp, Sig: "T(T)", Emu: "std::exp(a)"},
	{Name: "exp10", NS: mfp, Sig: "T(T)", Emu: "std::pow(10.0f, a)"},
	{Name: "exp2", NS: mfp, Sig: "T(T)", Emu: "std::exp2(a)"},
	{Name: "fabs", NS: mfp, Sig: "T(T)", Emu: "std::fabs(a)"},
	{Name: "abs", NS: mfp, Sig: "T(T)", Emu: "std::fabs(a)"},
	{Name: "fdim", NS: mfp, Sig: "T(T,T)", Emu: "std::fdim(a, b)"},
	{Name: "floor", NS: mfp, Sig: "T(T)", Emu: "std::floor(a)"},
	{Name: "fma", NS: mfp, Sig: "T(T,T,T)", Emu: "std::fma(a, b, c)"},
	{Name: "fmax", NS: mfp, Sig: "T(T,T)", Emu: "std::fmax(a, b)"},
	{Name: "fmax3", NS: mfp, Sig: "T(T,T,T)", Emu: "std::fmax(std::fmax(a, b), c)"},
	{Name: "fmedian3", NS: mfp, Sig: "T(T,T,T)", Emu: "std::fmax(std::fmin(a, b), std::fmin(std::fmax(a, b), c))"},
	{Name: "fmin", NS: mfp, Sig: "T(T,T)", Emu: "std::fmin(a, b)"},
	{Name: "fmin3", NS: mfp, Sig: "T(T,T,T)", Emu: "std::fmin(std::fmin(a, b), c)"},
	{Name: "fmod", NS: mfp, Sig: "T(T,T)", Emu: "std::fmod(a, b)"},
	{Name: "fract", NS: mfp, Sig: "T(T)", Emu: "std::fmin(a - std::floor(a), 0x1.fffffep-1f)"},
	{Name: "frexp", NS: mfp, Sig: "T(T,J)", Emu: "std::frexp(a, &b)"},
	{Name: "ilogb", NS: mfp, Sig: "I(T)", Emu: "std::ilogb(a)"},
	{Name: "ldexp", NS: mfp, Sig: "T(T,I)", Emu: "std::ldexp(a, b)"},
	{Name: "log", NS: mfp, Sig: "T(T)", Emu: "std::log(a)"},
	{Name: "log10", NS: mfp, Sig: "T(T)", Emu: "std::log10(a)"},
	{Name: "log2", NS: mfp, Sig: "T(T)", Emu: "std::log2(a)"},
	{Name: "max", NS: mfp, Sig: "T(T,T)", Emu: "std::fmax(a, b)"},
	{Name: "max3", NS: mfp, Sig: "T(T,T,T)", Emu: "std::fmax(std::fmax(a, b), c)"},
	{Name: "median3", NS: mfp, Sig: "T(T,T,T)", Emu: "std::fmax(std::fmin(a, b), std::fmin(std::fmax(a, b), c))"},
	{Name: "min", NS: mfp, Sig: "T(T,T)", Emu: "std::fmin(a, b)"},
	{Name: "min3", NS: mfp, Sig: "T(T,T,T)", Emu: "std::fmin(std::fmin(a, b), c)"},
	{Name: "modf", NS: mfp, Sig: "T(T,O)", Emu: "kt_modf(a, b)"},
	{Name: "nextafter", NS: "metal", Sig: "T(T,T)", Emu: "kt_nextafter(a, b)"},
	{Name: "pow", NS: mfp, Sig: "T(T,T)", Emu: "std::pow(a, b)"},
	{Name: "powr", NS: mfp, Sig: "T(T,T)", Emu: "std::pow(a, b)"},
	{Name: "rint", NS: mfp, Sig: "T(T)", Emu: "std::rint(a)"},
	{Name: "round", NS: mfp, Sig: "T(T)", Emu: "std::round(a)"},
	{Name: "rsqrt", NS: mfp, Sig: "T(T)", Emu: "1.0f / std::sqrt(a)"},
	{Name: "sin", NS: mfp, Sig: "T(T)", Emu: "std::sin(a)"},
	{Name: "sincos", NS: mfp, Sig: "T(T,O)", Emu: "kt_sincos(a, b)"},
	{Name: "sinh", NS: mfp, Sig: "T(T)", Emu: "std::sinh(a)"},
	{Name: "sinpi", NS: mfp, Sig: "T(T)", Emu: "std::sin(3.14159265358979323846 * a)"},
	{Name: "sqrt", NS: mfp, Sig: "T(T)", Emu: "std::sqrt(a)"},
	{Name: "tan", NS: mfp, Sig: "T(T)", Emu: "std::tan(a)"},
	{Name: "tanh", NS: mfp, Sig: "T(T)", Emu: "std::tanh(a)"},
	{Name: "tanpi", NS: mfp, Sig: "T(T)", Emu: "std::tan(3.14159265358979323846 * a)"},
	{Name: "trunc", NS: mfp, Sig: "T(T)", Emu: "std::trunc(a)"},
	// Common functions.
	{Name: "clamp", NS: mfp, Sig: "T(T,T,T)", Emu: "std::fmin(std::fmax(a, b), c)", Family: "common"},
	{Name: "mix", NS: mfp, Sig: "T(T,T,T)", Emu: "a + (b - a) * c", Family: "common"},
	{Name: "saturate", NS: mfp, Sig: "T(T)", Emu: "std::fmin(std::fmax(a, 0.0f), 1.0f)", Family: "common"},
	{Name: "sign", NS: mfp, Sig: "T(T)", Emu: "a > 0 ? 1.0f : a < 0 ? -1.0f : a == 0 ? 0.0f : 0.0f", Family: "common"},
	{Name: "smoothstep", NS: mfp, Sig: "T(T,T,T)", Emu: "kt_smoothstep(a, b, c)", Family: "common"},
	{Name: "step", NS: mfp, Sig: "T(T,T)", Emu: "b < a ? 0.0f : 1.0f", Family: "common"},
	// Integer functions.
	{Name: "abs", Types: Ints, Sig: "T(T)", Emu: "a < 0 ? -a : a", Family: "integer"},
	{Name: "absdiff", Types: Ints, Sig: "T(T,T)", Emu: "a > b ? a - b : b - a", Family: "integer"},
	{Name: "addsat", Types: Ints, Sig: "T(T,T)", Emu: "kt_addsat(a, b)", Family: "integer"},
	{Name: "clamp", Types: Ints, Sig: "T(T,T,T)", Emu: "std::min(std::max(a, b), c)", Family: "integer"},
	{Name: "clz", Types: Ints, Sig: "T(T)", Emu: "kt_clz(a)", Family: "integer"},
	{Name: "ctz", Types: Ints, Sig: "T(T)", Emu: "kt_ctz(a)", Family: "integer"},
	{Name: "extract_bits", Types: Ints, Sig: "T(T,n,n)", Emu: "kt_extract_bits(a, b, c)", Family: "integer"},
	{Name: "hadd", Types: Ints, Sig: "T(T,T)", Emu: "kt_hadd(a, b, 0)", Family: "integer"},
	{Name: "insert_bits", Types: Ints, Sig: "T(T,T,n,n)", Emu: "kt_insert_bits(a, b, c, d)", Family: "integer"},
	{Name: "mad24", Types: Int32s, Sig: "T(T,T,T)", Emu: "a * b + c", Family: "integer"},
	{Name: "madhi", Types: Ints, Sig: "T(T,T,T)", Emu: "kt_mulhi(a, b) + c", Family: "integer"},
	{Name: "madsat", Types: Ints, Sig: "T(T,T,T)", Emu: "kt_addsat(kt_mulsat(a, b), c)", Family: "integer"},
	{Name: "max", Types: Ints, Sig: "T(T,T)", Emu: "std::max(a, b)", Family: "integer"},
	{Name: "max3", Types: Ints, Sig: "T(T,T,T)", Emu: "std::max(std::max(a, b), c)", Family: "integer"},
	{Name: "median3", Types: Ints, Sig: "T(T,T,T)", Emu: "std::max(std::min(a, b), std::min(std::max(a, b), c))", Family: "integer"},
	{Name: "min", Types: Ints, Sig: "T(T,T)", Emu: "std::min(a, b)", Family: "integer"},
	{Name: "min3", Types: Ints, Sig: "T(T,T,T)", Emu: "std::min(std::min(a, b), c)", Family: "integer"},
	{Name: "mul24", Types: Int32s, Sig: "T(T,T)", Emu: "a * b", Family: "integer"},
	{Name: "mulhi", Types: Ints, Sig: "T(T,T)", Emu: "kt_mulhi(a, b)", Family: "integer"},
	{Name: "popcount", Types: Ints, Sig: "T(T)", Emu: "kt_popcount(a)", Family: "integer"},
	{Name: "reverse_bits", Types: Ints, Sig: "T(T)", Emu: "kt_reverse_bits(a)", Family: "integer"},
	{Name: "rhadd", Types: Ints, Sig: "T(T,T)", Emu: "kt_hadd(a, b, 1)", Family: "integer"},
	{Name: "rotate", Types: Ints, Sig: "T(T,T)", Emu: "kt_rotate(a, b)", Family: "integer"},
	{Name: "subsat", Types: Ints, Sig: "T(T,T)", Emu: "kt_subsat(a, b)", Family: "integer"},
	// Relational functions.
	{Name: "isfinite", Sig: "B(T)", Emu: "std::isfinite(a)", Family: "relational"},
	{Name: "isinf", Sig: "B(T)", Emu: "std::isinf(a)", Family: "relational"},
	{Name: "isnan", Sig: "B(T)", Emu: "std::isnan(a)", Family: "relational"},
	{Name: "isnormal", Sig: "B(T)", Emu: "std::isnormal(a)", Family: "relational"},
	{Name: "isordered", Sig: "B(T,T)", Emu: "!std::isnan(a) && !std::isnan(b)", Family: "relational"},
	{Name: "isunordered", Sig: "B(T,T)", Emu: "std::isnan(a) || std::isnan(b)", Family: "relational"},
	{Name: "signbit", Sig: "B(T)", Emu: "std::signbit(a)", Family: "relational"},
	{Name: "select", Types: Numbers + " bool", Sig: "T(T,T,B)", Emu: "c ? b : a", Family: "relational"},
	{Name: "all", Types: "bool", VecOnly: true, Sig: "b(T)", Emu: "=bool r = true; for (int i = 0; i < N; ++i) r = r && a[i]; return r;", Family: "relational"},
	{Name: "any", Types: "bool", VecOnly: true, Sig: "b(T)", Emu: "=bool r = false; for (int i = 0; i < N; ++i) r = r || a[i]; return r;", Family: "relational"},
	// not(boolN) is left out: `not` is an alternative token for ! in C++.
	// Geometric functions.
	{Name: "cross", Types: Geometry, VecOnly: true, Only3: true, NS: mfp, Sig: "T(T,T)", Emu: "=return T(E(float(a.y) * float(b.z) - float(a.z) * float(b.y)), E(float(a.z) * float(b.x) - float(a.x) * float(b.z)), E(float(a.x) * float(b.y) - float(a.y) * float(b.x)));", Family: "geometric"},
	{Name: "dot", Types: Geometry, VecOnly: true, NS: mfp, Sig: "E(T,T)", Emu: "=float r = 0; for (int i = 0; i < N; ++i) r += float(a[i]) * float(b[i]); return E(r);", Family: "geometric"},
	{Name: "length_squared", Types: Geometry, VecOnly: true, NS: mfp, Sig: "E(T)", Emu: "=float r = 0; for (int i = 0; i < N; ++i) r += float(a[i]) * float(a[i]); return E(r);", Family: "geometric"},
	{Name: "length", Types: Geometry, VecOnly: true, NS: mfp, Sig: "E(T)", Emu: "=return E(std::sqrt(float(length_squared(a))));", Family: "geometric"},
	{Name: "distance_squared", Types: Geometry, VecOnly: true, NS: mfp, Sig: "E(T,T)", Emu: "=return length_squared(T(a - b));", Family: "geometric"},
	{Name: "distance", Types: Geometry, VecOnly: true, NS: mfp, Sig: "E(T,T)", Emu: "=return length(T(a - b));", Family: "geometric"},
	{Name: "normalize", Types: Geometry, VecOnly: true, NS: mfp, Sig: "T(T)", Emu: "=float l = float(length(a)); T r; for (int i = 0; i < N; ++i) r[i] = E(float(a[i]) / l); return r;", Family: "geometric"},
	{Name: "faceforward", Types: Geometry, VecOnly: true, NS: mfp, Sig: "T(T,T,T)", Emu: "=return float(dot(c, b)) < 0 ? a : T(-a);", Family: "geometric"},
	{Name: "reflect", Types: Geometry, VecOnly: true, NS: mfp, Sig: "T(T,T)", Emu: "=float d = 2 * float(dot(b, a)); T r; for (int i = 0; i < N; ++i) r[i] = E(float(a[i]) - d * float(b[i])); return r;", Family: "geometric"},
	{Name: "refract", Types: Geometry, VecOnly: true, NS: mfp, Sig: "T(T,T,E)", Emu: "=float d = float(dot(b, a)), e = float(c), k = 1 - e * e * (1 - d * d); T r; for (int i = 0; i < N; ++i) r[i] = E(k < 0 ? 0.0f : e * float(a[i]) - (e * d + std::sqrt(k)) * float(b[i])); return r;", Family: "geometric"},
}

// SIMD lists the SIMD-group functions; each also exists as quad_NAME over
// groups of 4 lanes. Sig and Types as in Func; Emu names the emulation's
// template (kt_emu::group_NAME<width>).
var SIMD = []Func{
	{Name: "all", Types: "bool", Sig: "b(b)"},
	{Name: "any", Types: "bool", Sig: "b(b)"},
	{Name: "ballot", Types: "bool", Sig: "V(b)"},
	{Name: "is_first", Sig: "b()"},
	{Name: "is_helper_thread", Sig: "b()"},
	{Name: "broadcast", Types: SIMDType, Vec: true, Sig: "T(T,u)"},
	{Name: "broadcast_first", Types: SIMDType, Vec: true, Sig: "T(T)"},
	{Name: "max", Types: SIMDType, Vec: true, Sig: "T(T)"},
	{Name: "min", Types: SIMDType, Vec: true, Sig: "T(T)"},
	{Name: "sum", Types: SIMDType, Vec: true, Sig: "T(T)"},
	{Name: "product", Types: SIMDType, Vec: true, Sig: "T(T)"},
	{Name: "and", Types: SIMDInts, Vec: true, Sig: "T(T)"},
	{Name: "or", Types: SIMDInts, Vec: true, Sig: "T(T)"},
	{Name: "xor", Types: SIMDInts, Vec: true, Sig: "T(T)"},
	{Name: "prefix_exclusive_product", Types: SIMDType, Vec: true, Sig: "T(T)"},
	{Name: "prefix_exclusive_sum", Types: SIMDType, Vec: true, Sig: "T(T)"},
	{Name: "prefix_inclusive_product", Types: SIMDType, Vec: true, Sig: "T(T)"},
	{Name: "prefix_inclusive_sum", Types: SIMDType, Vec: true, Sig: "T(T)"},
	{Name: "shuffle", Types: SIMDType, Vec: true, Sig: "T(T,u)"},
	{Name: "shuffle_and_fill_down", Types: SIMDType, Vec: true, Sig: "T(T,T,u)"},
	{Name: "shuffle_and_fill_up", Types: SIMDType, Vec: true, Sig: "T(T,T,u)"},
	{Name: "shuffle_down", Types: SIMDType, Vec: true, Sig: "T(T,u)"},
	{Name: "shuffle_rotate_down", Types: SIMDType, Vec: true, Sig: "T(T,u)"},
	{Name: "shuffle_rotate_up", Types: SIMDType, Vec: true, Sig: "T(T,u)"},
	{Name: "shuffle_up", Types: SIMDType, Vec: true, Sig: "T(T,u)"},
	{Name: "shuffle_xor", Types: SIMDType, Vec: true, Sig: "T(T,u)"},
}

// Atomic lists the atomic operations on atomic<T> (atomic_int, atomic_uint,
// and atomic<float> from MSL 3.0) in device and threadgroup memory.
var Atomic = []struct{ Name, Sig, Types string }{
	{"atomic_load_explicit", "T(A,M)", "int uint float"},
	{"atomic_store_explicit", "v(A,T,M)", "int uint float"},
	{"atomic_exchange_explicit", "T(A,T,M)", "int uint float"},
	{"atomic_compare_exchange_weak_explicit", "b(A,P,T,M,M)", "int uint float"},
	{"atomic_fetch_add_explicit", "T(A,T,M)", "int uint float"},
	{"atomic_fetch_sub_explicit", "T(A,T,M)", "int uint float"},
	{"atomic_fetch_min_explicit", "T(A,T,M)", "int uint float"},
	{"atomic_fetch_max_explicit", "T(A,T,M)", "int uint float"},
	{"atomic_fetch_and_explicit", "T(A,T,M)", "int uint"},
	{"atomic_fetch_or_explicit", "T(A,T,M)", "int uint"},
	{"atomic_fetch_xor_explicit", "T(A,T,M)", "int uint"},
}
