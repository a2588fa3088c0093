package spec

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/mslcheck"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
)

// emuStdlib stands in for <metal_stdlib> so that an MLX kernel's generated
// source runs on the CPU: every thread of a threadgroup is a std::thread,
// threadgroup memory is a static local shared by them (threadgroups run
// one after another), threadgroup_barrier is a std::barrier. (No thread
// address-space macro: it would rewrite std::thread.)
const emuStdlib = `#pragma once
#include <barrier>
#include <cmath>
#include <cstdint>
#define kernel
#define device
#define constant
#define threadgroup static
#include <atomic>
#include <bit>
#include <limits>
#define METAL_FUNC inline
namespace metal {
typedef unsigned int uint;
typedef __fp16 half;  // storage only; the emulation runs f32
// bfloat: 16 bits of storage, float arithmetic, round to nearest even.
struct bfloat {
  unsigned short bits;
  bfloat() = default;
  constexpr bfloat(float f) : bits(round(f)) {}
  constexpr operator float() const { return std::bit_cast<float>(unsigned(bits) << 16); }
  static constexpr unsigned short round(float f) {
    unsigned u = std::bit_cast<unsigned>(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
    return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
};
template <typename T> struct numeric_limits : std::numeric_limits<T> {};
template <> struct numeric_limits<half> {
  static constexpr float max() { return 65504.0f; }
  static constexpr float infinity() { return std::numeric_limits<float>::infinity(); }
};
template <> struct numeric_limits<bfloat> {
  static constexpr float max() { return 3.38953139e38f; }
  static constexpr float infinity() { return std::numeric_limits<float>::infinity(); }
};
struct uint2 { uint x, y; };
struct uint3 {
  union { struct { uint x, y, z; }; uint2 xy; };  // .xy: MSL's swizzle
  uint3() = default;
  constexpr uint3(uint a, uint b, uint c) : x(a), y(b), z(c) {}
};
template <typename T, int N> struct vec { T x, y, z, w; };
// Atomics: std::atomic of the same size as the element, as Metal's.
enum memory_order { memory_order_relaxed };
template <typename T> struct atomic { std::atomic<T> v; };
template <typename T> T atomic_fetch_add_explicit(atomic<T>* o, T x, memory_order) { return o->v.fetch_add(x); }
template <typename T> T atomic_load_explicit(atomic<T>* o, memory_order) { return o->v.load(); }
template <typename T> void atomic_store_explicit(atomic<T>* o, T x, memory_order) { o->v.store(x); }
enum class mem_flags { mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4 };
inline std::barrier<>* kt_barrier;
inline void threadgroup_barrier(mem_flags) { kt_barrier->arrive_and_wait(); }
using std::fma;
using std::exp;
inline float rsqrt(float x) { return 1.0f / std::sqrt(x); }
}  // namespace metal
`

// emuHalf converts __fp16 storage (f16 kernels) on x86, where clang
// calls these helpers from a runtime library the link does not include:
// f16 to f32 exactly, f32 to f16 rounding to nearest even.
const emuHalf = `
#include <bit>
extern "C" float __gnu_h2f_ieee(unsigned short h) {
  unsigned s = (h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e == 0x1f) return std::bit_cast<float>(s | 0x7f800000u | (m << 13));
  if (e == 0) {
    float f = float(m) * 5.9604644775390625e-8f;  // m * 2^-24
    return s ? -f : f;
  }
  return std::bit_cast<float>(s | ((e + 112) << 23) | (m << 13));
}
extern "C" unsigned short __gnu_f2h_ieee(float f) {
  unsigned u = std::bit_cast<unsigned>(f), s = (u >> 16) & 0x8000u;
  unsigned a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return s | 0x7e00;
  if (a >= 0x477ff000u) return s | 0x7c00;  // rounds to infinity
  if (a < 0x38800000u) {                    // subnormal or zero in f16
    float r = std::bit_cast<float>(a) * 16777216.0f;  // * 2^24, rounds to nearest even
    return s | (unsigned short)(r);
  }
  unsigned r = a - 0x38000000u;  // rebias
  r = (r + 0xfffu + ((r >> 13) & 1u)) >> 13;
  return s | (unsigned short)r;
}
`

// emuRunner is the C++ that launches one case as Metal's dispatchThreads
// would: threadgroups over the grid, each min(threadgroup, rest of the
// grid) threads, and prints the output.
const emuRunner = `
namespace kt_run_%[1]d {
%[2]s
void run() {
  const unsigned G[3] = {%[3]d, %[4]d, %[5]d}, TG[3] = {%[6]d, %[7]d, %[8]d};
%[9]s
  for (unsigned bz = 0; bz * TG[2] < G[2]; ++bz)
    for (unsigned by = 0; by * TG[1] < G[1]; ++by)
      for (unsigned bx = 0; bx * TG[0] < G[0]; ++bx) {
        const unsigned n0 = std::min(TG[0], G[0] - bx * TG[0]), n1 = std::min(TG[1], G[1] - by * TG[1]), n2 = std::min(TG[2], G[2] - bz * TG[2]);
        std::barrier<> bar(n0 * n1 * n2);
        metal::kt_barrier = &bar;
        std::vector<std::thread> ts;
        for (unsigned lz = 0; lz < n2; ++lz)
          for (unsigned ly = 0; ly < n1; ++ly)
            for (unsigned lx = 0; lx < n0; ++lx)
              ts.emplace_back([=] {
                const metal::uint3 tpig{bx * TG[0] + lx, by * TG[1] + ly, bz * TG[2] + lz}, tpitg{lx, ly, lz}, tgpig{bx, by, bz};
                const metal::uint3 tptg{n0, n1, n2}, grid{G[0], G[1], G[2]};
                (void)tpig; (void)tpitg; (void)tgpig; (void)tptg; (void)grid;
                kt_candidate_%[1]d::%[10]s(%[11]s);
              });
        for (auto& t : ts) t.join();
      }
  std::printf("case %[1]d\n");
%[12]s}
}  // namespace kt_run_%[1]d
`

// emuCase is one example candidate run on one shape.
type emuCase struct {
	example string
	cand    map[string]int
	shape   []int
	dt      kernels.DType // "": f32
	options []string
	// edit breaks the body (the check must then fail verification)
	edit func(string) string
}

// The MLX examples compute what their float64 references say when their
// generated sources run under MLX's launch (grid in threads, threadgroups
// of min(threadgroup, grid)), emulated on the CPU: the kernels are checked
// for results, not only for syntax, off a Mac.
func TestMLXExamplesComputeOnCPU(t *testing.T) {
	cc := mslcheck.Require(t)
	type m = map[string]int
	cases := []emuCase{
		{example: "mlx_qr_col_dot.json", cand: m{"TG": 32, "UNROLL": 4}, shape: []int{33, 7}},
		{example: "mlx_qr_col_dot.json", cand: m{"TG": 64, "UNROLL": 8}, shape: []int{130, 29}},
		{example: "mlx_gemm_av.json", cand: m{"BM": 32, "BN": 8, "BK": 16}, shape: []int{37, 53, 29}},
		{example: "mlx_gemm_av.json", cand: m{"BM": 8, "BN": 16, "BK": 32}, shape: []int{130, 7, 65}},
		// Packed uint32 weights, per-group scales and biases.
		{example: "mlx_qmv4.json", cand: m{"TPR": 8, "ROWS": 4}, shape: []int{9, 128}},
		{example: "mlx_qmv4.json", cand: m{"TPR": 4, "ROWS": 2}, shape: []int{33, 192}, dt: kernels.F16},
		{example: "mlx_qmv4.json", cand: m{"TPR": 16, "ROWS": 1}, shape: []int{33, 192}, dt: kernels.BF16},
		// Atomic outputs of two types, filled with init_value first.
		{example: "mlx_scatter_add.json", cand: m{"TG": 64, "ITEMS": 2}, shape: []int{1000, 7}},
		{example: "mlx_scatter_add.json", cand: m{"TG": 128, "ITEMS": 1}, shape: []int{77, 3}},
		// Two outputs (the second float32 in f16 too), a template dtype,
		// MLX's elem_to_loc on a transposed view of x.
		{example: "mlx_rmsnorm_inv.json", cand: m{"TG": 32}, shape: []int{3, 37}},
		{example: "mlx_rmsnorm_inv.json", cand: m{"TG": 64}, shape: []int{5, 100}, dt: kernels.F16},
		{example: "mlx_rmsnorm_inv.json", cand: m{"TG": 32}, shape: []int{5, 100}, options: []string{stridedOption}},
		{example: "mlx_exp1d.json", cand: m{"TG": 64}, shape: []int{1000}},
		{example: "mlx_exp1d.json", cand: m{"TG": 256}, shape: []int{8}, dt: kernels.F16},
		{example: "mlx_add_one.json", cand: m{"TG": 64}, shape: []int{1000}},
		{example: "mlx_add1d.json", cand: m{"TG": 32}, shape: []int{77}, dt: kernels.F16},
		{example: "mlx_divmap.json", cand: m{"TG": 64}, shape: []int{37, 29}},
		{example: "mlx_twod.json", cand: m{"TX": 8, "TY": 4}, shape: []int{37, 29}},
		{example: "mlx_twod.json", cand: m{"TX": 16, "TY": 2}, shape: []int{3, 7}, dt: kernels.F16},
		// Teeth: without the tail loop the last rows of Q are dropped;
		// staging A without the slice offset k0 multiplies the first slice
		// of A with every slice of V; nibbles read from the wrong end, all
		// counts in one bin, and a view read as if row-contiguous fail.
		{example: "mlx_qr_col_dot.json", cand: m{"TG": 32, "UNROLL": 4}, shape: []int{33, 7}, edit: func(s string) string {
			return strings.Replace(s, "for (; i < m; ++i) {", "for (; false; ++i) {", 1)
		}},
		{example: "mlx_gemm_av.json", cand: m{"BM": 16, "BN": 16, "BK": 8}, shape: []int{37, 53, 29}, edit: func(s string) string {
			return strings.Replace(s, "A[(row0 + r) * k + k0 + c]", "A[(row0 + r) * k + c]", 1)
		}},
		{example: "mlx_qmv4.json", cand: m{"TPR": 8, "ROWS": 4}, shape: []int{9, 128}, edit: func(s string) string {
			return strings.Replace(s, "(q >> (4 * j))", "(q >> (4 * (7 - j)))", 1)
		}},
		{example: "mlx_scatter_add.json", cand: m{"TG": 64, "ITEMS": 2}, shape: []int{1000, 7}, edit: func(s string) string {
			return strings.Replace(s, "&counts[b]", "&counts[0]", 1)
		}},
		// A 2D index with the wrong row length leaves elements unwritten;
		// the column taken modulo the wrong extent reads the wrong input.
		{example: "mlx_twod.json", cand: m{"TX": 8, "TY": 4}, shape: []int{3, 7}, edit: func(s string) string {
			return strings.Replace(s, "uint idx = g.y * k + g.x;", "uint idx = g.y * n + g.x;", 1)
		}},
		{example: "mlx_divmap.json", cand: m{"TG": 64}, shape: []int{3, 7}, edit: func(s string) string {
			return strings.Replace(s, "uint col = gid % k;", "uint col = gid % n;", 1)
		}},
		{example: "mlx_rmsnorm_inv.json", cand: m{"TG": 32}, shape: []int{5, 100}, options: []string{stridedOption}, edit: func(s string) string {
			return strings.ReplaceAll(s, "x[elem_to_loc(int64_t(row * cols + c), x_shape, x_strides, x_ndim)]", "x[row * cols + c + 0 * x_shape[0] * x_strides[0] * x_ndim]")
		}},
	}
	var srcs, runners []string
	var problems []*kernels.Problem
	for i, ec := range cases {
		c := loadExample(t, ec.example)
		dt := ec.dt
		if dt == "" {
			dt = kernels.F32
		}
		p, err := kernels.NewProblem(c.Kernel, dt, kernels.Case{Shape: ec.shape, Options: ec.options}, rand.New(rand.NewPCG(uint64(i), 7)))
		if err != nil {
			t.Fatal(err)
		}
		problems = append(problems, p)
		m := *c.Body.MLX
		if ec.edit != nil {
			edited := ec.edit(m.Source)
			if edited == m.Source {
				t.Fatalf("case %d: the edit changed nothing", i)
			}
			m.Source = edited
		}
		body := *c.Body
		body.MLX = &m
		src, err := body.SourceFor(gpu.Metal, dt, ec.cand)
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, src)
		runners = append(runners, emuRun(t, i, &body, p, ec.cand))
	}
	dir := t.TempDir()
	inc := filepath.Join(dir, "emu")
	os.Mkdir(inc, 0o755)
	os.WriteFile(filepath.Join(inc, "metal_stdlib"), []byte(emuStdlib), 0o644)
	prog := "#include <algorithm>\n#include <cstdio>\n#include <thread>\n#include <vector>\n" + emuHalf + emuBatch(srcs) + strings.Join(runners, "") + "int main() {\n"
	for i := range cases {
		prog += fmt.Sprintf("  kt_run_%d::run();\n", i)
	}
	prog += "}\n"
	path := filepath.Join(dir, "emu.cpp")
	os.WriteFile(path, []byte(prog), 0o644)
	bin := filepath.Join(dir, "emu.bin")
	if out, err := exec.Command(cc, "-x", "c++", "-std=c++20", "-O1", "-pthread", "-Wno-unknown-attributes", "-Wno-deprecated-anon-enum-enum-conversion", "-I", inc, path, "-lstdc++", "-lm", "-o", bin).CombinedOutput(); err != nil {
		t.Fatalf("compiling the emulation: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("running the emulation: %v", err)
	}
	results := strings.Split(string(out), "case ")[1:]
	if len(results) != len(cases) {
		t.Fatalf("%d results for %d cases", len(results), len(cases))
	}
	for i, r := range results {
		p := problems[i]
		var got []float32
		for j, hexOut := range strings.Fields(r)[1:] {
			raw, err := hex.DecodeString(hexOut)
			op := p.Kernel.OutOperands(p.Case)[j]
			e := op.Elem.In(p.DType)
			if err != nil || len(raw) != op.Len*e.Size() {
				t.Fatalf("case %d output %d: %d bytes (%v)", i, j, len(raw), err)
			}
			got = append(got, e.Decode(raw, op.Len)...)
		}
		err := p.Verify(got)
		ec := cases[i]
		switch {
		case ec.edit == nil && err != nil:
			t.Errorf("%s %s %v on %v%v: %v", ec.example, p.DType, ec.cand, ec.shape, ec.options, err)
		case ec.edit != nil && err == nil:
			t.Errorf("%s %v on %v: a broken body passed verification", ec.example, ec.cand, ec.shape)
		case ec.edit != nil:
			t.Logf("%s %v on %v, broken body: %v", ec.example, ec.cand, ec.shape, err)
		default:
			t.Logf("%s %v on %v: %d outputs verified", ec.example, ec.cand, ec.shape, len(got))
		}
	}
}

// emuRun writes the runner of one case: the inputs, the Bytes arguments
// and the attributes, bound in the order of MLX's signature.
func emuRun(t *testing.T, i int, b *gpu.Body, p *kernels.Problem, cand map[string]int) string {
	t.Helper()
	var decls, args []string
	consts := b.Consts(p.Case)
	ops := p.Kernel.Inputs(p.Case)
	outs := p.Kernel.OutOperands(p.Case)
	var outDecls, prints strings.Builder
	nIn, nOut, nConst := 0, 0, 0
	bytesDecl := func(name string, raw []byte, mutable bool) string {
		vals := make([]string, len(raw))
		for j, v := range raw {
			vals[j] = strconv.Itoa(int(v))
		}
		q := "const "
		if mutable {
			q = ""
		}
		return fmt.Sprintf("alignas(8) static %sunsigned char %s[] = {%s};", q, name, strings.Join(vals, ", "))
	}
	for _, bd := range b.MLX.Bindings() {
		name := fmt.Sprintf("a_%s", bd.Name)
		switch bd.Kind {
		case gpu.In:
			e := ops[nIn].Elem.In(p.DType)
			decls = append(decls, bytesDecl(name, e.Encode(p.Inputs[nIn]), false))
			if b.MLX.Inputs[bd.Input].Scalar {
				args = append(args, "KtRef{"+name+"}")
			} else {
				args = append(args, "KtPtr{"+name+"}")
			}
			nIn++
		case gpu.Out:
			e := outs[nOut].Elem.In(p.DType)
			n := outs[nOut].Len
			var init []byte
			if v := p.Kernel.Init; v != nil {
				init = e.Fill(*v, n)
			} else {
				for len(init) < n*e.Size() {
					init = append(init, e.Poison()...)
				}
			}
			fmt.Fprintf(&outDecls, "  %s\n", bytesDecl(name, init, true))
			fmt.Fprintf(&prints, "  for (unsigned char c : %s) std::printf(\"%%02x\", c);\n  std::printf(\"\\n\");\n", name)
			args = append(args, "KtPtr{"+name+"}")
			nOut++
		case gpu.Bytes:
			vals := make([]string, len(consts[nConst]))
			for j, v := range consts[nConst] {
				vals[j] = strconv.Itoa(int(v))
			}
			nConst++
			decls = append(decls, fmt.Sprintf("alignas(8) static const unsigned char %s[] = {%s};", name, strings.Join(vals, ", ")))
			if bd.Part == gpu.PartNDim {
				args = append(args, "KtRef{"+name+"}")
			} else {
				args = append(args, "KtPtr{"+name+"}")
			}
		}
	}
	attrs := map[string]string{
		"thread_position_in_grid": "tpig", "thread_position_in_threadgroup": "tpitg", "threadgroup_position_in_grid": "tgpig",
		"threads_per_threadgroup": "tptg", "threads_per_grid": "grid", "grid_size": "grid",
	}
	for _, a := range b.MLX.Attributes() {
		v, ok := attrs[a]
		if !ok {
			t.Fatalf("the emulation does not provide attribute %s", a)
		}
		args = append(args, v)
	}
	decls = append(decls,
		"struct KtPtr { const void* p; template <typename T> operator T*() const { return (T*)p; } };",
		"struct KtRef { const void* p; template <typename T> operator T&() const { return *(T*)p; } };")
	l := b.Geometry(p.Case.Shape, cand)
	fn := b.FuncName(p.DType, cand) // ForSyntaxCheck made the instantiation a plain kernel
	return fmt.Sprintf(emuRunner, i, strings.Join(decls, "\n"), l.ThreadGrid[0], l.ThreadGrid[1], l.ThreadGrid[2],
		l.Group[0], l.Group[1], l.Group[2], outDecls.String(), fn, strings.Join(args, ", "), prints.String())
}

// emuBatch joins MLX sources (which define no macros) for one C++
// program: <metal_stdlib> once, then each source, rewritten by
// gpu.ForSyntaxCheck into a plain kernel, in namespace kt_candidate_<i>.
func emuBatch(srcs []string) string {
	var b strings.Builder
	b.WriteString("#include <metal_stdlib>\n")
	for i, s := range srcs {
		s = strings.Replace(gpu.ForSyntaxCheck(s), "#include <metal_stdlib>\n", "", 1)
		fmt.Fprintf(&b, "namespace kt_candidate_%d {\n%s\n}\n", i, s)
	}
	return b.String()
}
