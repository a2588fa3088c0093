package mslemu

import (
	"context"
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/mslcheck"
)

func f32s(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func bytesOf(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

const head = "#include <metal_stdlib>\nusing namespace metal;\n"

// The SIMD-group functions, threadgroup memory and simdgroup_matrix
// compute what Apple's documentation says, on small kernels whose results
// are computed here too.
// buildRun builds ks with cc in a temporary folder and runs ls.
func buildRun(t *testing.T, cc string, ks []Kernel, ls []*Launch) []Result {
	t.Helper()
	p, err := Build(context.Background(), cc, t.TempDir(), ks)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Run(context.Background(), ls)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestSemantics(t *testing.T) {
	cc := mslcheck.Require(t)
	attrs := []Arg{Buf(0), Buf(1), Attr("thread_index_in_threadgroup"), Attr("thread_index_in_simdgroup"), Attr("simdgroup_index_in_threadgroup")}
	type tc struct {
		name, body string
		threads    int
		want       func(i int, in []float32) float32
	}
	in := make([]float32, 256)
	for i := range in {
		in[i] = float32(i*7%61) - 20
	}
	cases := []tc{
		{"shuffle_xor", "y[tid] = simd_shuffle_xor(x[tid], (ushort)5);", 64, func(i int, x []float32) float32 { return x[i^5] }},
		{"shuffle_down", "y[tid] = simd_shuffle_down(x[tid], (ushort)3);", 64, func(i int, x []float32) float32 {
			if i%32+3 < 32 {
				return x[i+3]
			}
			return x[i]
		}},
		{"shuffle_up", "y[tid] = simd_shuffle_up(x[tid], (ushort)2);", 64, func(i int, x []float32) float32 {
			if i%32 >= 2 {
				return x[i-2]
			}
			return x[i]
		}},
		{"broadcast", "y[tid] = simd_broadcast(x[tid], (ushort)7);", 64, func(i int, x []float32) float32 { return x[i/32*32+7] }},
		{"sum", "y[tid] = simd_sum(x[tid]);", 96, func(i int, x []float32) float32 {
			s := float32(0)
			for l := i / 32 * 32; l < i/32*32+32; l++ {
				s += x[l]
			}
			return s
		}},
		{"max", "y[tid] = simd_max(x[tid]);", 64, func(i int, x []float32) float32 {
			m := x[i/32*32]
			for l := i / 32 * 32; l < i/32*32+32; l++ {
				m = max(m, x[l])
			}
			return m
		}},
		{"lanes", "y[tid] = (float)(sg * 100 + lane);", 96, func(i int, x []float32) float32 { return float32(i/32*100 + i%32) }},
		// Threadgroup memory, reversed across a barrier.
		{"threadgroup", "threadgroup float s[128];\n  s[tid] = x[tid];\n  threadgroup_barrier(mem_flags::mem_threadgroup);\n  y[tid] = s[127 - tid];", 128, func(i int, x []float32) float32 { return x[127-i] }},
		// An 8×8 matrix loaded transposed, multiplied by the identity,
		// stored: the transpose.
		{"transpose", "threadgroup float s[64];\n  if (tid < 64) s[tid] = x[tid];\n  threadgroup_barrier(mem_flags::mem_threadgroup);\n" +
			"  simdgroup_float8x8 a, id = make_filled_simdgroup_matrix<float, 8, 8>(0.0f), c;\n" +
			"  threadgroup float e[64];\n  if (tid < 64) e[tid] = (tid % 9 == 0) ? 1.0f : 0.0f;\n  threadgroup_barrier(mem_flags::mem_threadgroup);\n" +
			"  simdgroup_load(a, s, 8, ulong2(0, 0), true);\n  simdgroup_load(id, e, 8);\n" +
			"  simdgroup_multiply_accumulate(c, a, id, make_filled_simdgroup_matrix<float, 8, 8>(1.0f));\n" +
			"  threadgroup float o[64];\n  if (sg == 0) simdgroup_store(c, o, 8);\n  threadgroup_barrier(mem_flags::mem_threadgroup);\n  if (tid < 64) y[tid] = o[tid];",
			64, func(i int, x []float32) float32 { return x[i%8*8+i/8] + 1 }},
		// Half operands with a float accumulator: products of halves are exact in float.
		{"half_mma", "threadgroup half s[64];\n  if (tid < 64) s[tid] = (half)x[tid];\n  threadgroup_barrier(mem_flags::mem_threadgroup);\n" +
			"  simdgroup_half8x8 a;\n  simdgroup_float8x8 c = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);\n" +
			"  simdgroup_load(a, s, 8);\n  simdgroup_multiply_accumulate(c, a, a, c);\n" +
			"  threadgroup float o[64];\n  if (sg == 0) simdgroup_store(c, o, 8);\n  threadgroup_barrier(mem_flags::mem_threadgroup);\n  if (tid < 64) y[tid] = o[tid];",
			64, func(i int, x []float32) float32 {
				r, c := i/8, i%8
				s := float32(0)
				for k := range 8 {
					s += x[r*8+k] * x[k*8+c]
				}
				return s
			}},
	}
	var ks []Kernel
	var ls []*Launch
	for _, c := range cases {
		src := head + "kernel void f(device const float* x [[buffer(0)]], device float* y [[buffer(1)]], uint tid [[thread_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]]) {\n  " + c.body + "\n}\n"
		ks = append(ks, Kernel{Name: c.name, Source: src, Func: "f", Args: attrs})
		out := make([]float32, c.threads)
		for i := range out {
			out[i] = float32(math.NaN())
		}
		ls = append(ls, &Launch{Kernel: len(ks) - 1, Groups: [3]int{1, 1, 1}, Group: [3]int{c.threads, 1, 1}, Buffers: [][]byte{bytesOf(in), bytesOf(out)}})
	}
	res := buildRun(t, cc, ks, ls)
	for i, c := range cases {
		if res[i].Err != nil {
			t.Errorf("%s: %v", c.name, res[i].Err)
			continue
		}
		got := f32s(ls[i].Buffers[1])
		for j, g := range got {
			if w := c.want(j, in); g != w {
				t.Errorf("%s: y[%d] = %g, want %g", c.name, j, g, w)
				break
			}
		}
	}
}

// A barrier that some threads never reach is a deadlock, a write past a
// buffer's end is found, and threadgroup memory is counted.
func TestFailures(t *testing.T) {
	cc := mslcheck.Require(t)
	args := []Arg{Buf(0), Attr("thread_index_in_threadgroup")}
	srcs := []string{
		"if (tid < 16) threadgroup_barrier(mem_flags::mem_threadgroup);\n  y[tid] = 1.0f;",
		"y[tid + 1] = 1.0f;",
		"threadgroup float a[100];\n  threadgroup half b[8][3];\n  a[tid] = 1.0f; b[0][0] = 1.0f;\n  y[tid] = a[tid];",
	}
	var ks []Kernel
	var ls []*Launch
	for i, s := range srcs {
		ks = append(ks, Kernel{Name: s, Source: head + "kernel void f(device float* y [[buffer(0)]], uint tid [[thread_index_in_threadgroup]]) {\n  " + s + "\n}\n", Func: "f", Args: args})
		ls = append(ls, &Launch{Kernel: i, Groups: [3]int{1, 1, 1}, Group: [3]int{32, 1, 1}, Buffers: [][]byte{make([]byte, 128)}})
	}
	res := buildRun(t, cc, ks, ls)
	if res[0].Err == nil || !strings.Contains(res[0].Err.Error(), "deadlock") {
		t.Errorf("a barrier half the threads skip: %v", res[0].Err)
	}
	if res[1].Err == nil || !strings.Contains(res[1].Err.Error(), "outside buffer 0") {
		t.Errorf("a write past the end: %v", res[1].Err)
	}
	if res[2].Err != nil || res[2].Shared != 400+48 {
		t.Errorf("threadgroup memory: %d bytes (%v), want 448", res[2].Shared, res[2].Err)
	}
}

// A dispatchThreads launch whose grid is no multiple of the threadgroup
// cuts the last threadgroup short; every thread's position in the grid
// still counts in the dispatched threadgroup size, so each element is
// written once (MLX's grid=(a.size, 1, 1) with threadgroup 64, a.size
// 1000), and threads_per_threadgroup is the cut size where
// dispatch_threads_per_threadgroup is the dispatched one.
func TestPartialThreadgroupPositions(t *testing.T) {
	cc := mslcheck.Require(t)
	src := head + `kernel void pos(device float* out [[buffer(0)]], uint gid [[thread_position_in_grid]],
                uint3 tptg [[threads_per_threadgroup]], uint3 dtptg [[dispatch_threads_per_threadgroup]]) {
  out[gid] = float(gid) + (tptg.x == (gid >= 960 ? 40u : 64u) && dtptg.x == 64u ? 0.0f : 0.5f);
}
`
	const n = 1000
	l := &Launch{Threads: [3]int{n, 1, 1}, Group: [3]int{64, 1, 1}, Buffers: [][]byte{bytesOf(make([]float32, n))}}
	for i := range n {
		copy(l.Buffers[0][4*i:], bytesOf([]float32{float32(math.NaN())}))
	}
	res := buildRun(t, cc, []Kernel{{Name: "pos", Source: src, Func: "pos",
		Args: []Arg{Buf(0), Attr("thread_position_in_grid"), Attr("threads_per_threadgroup"), Attr("dispatch_threads_per_threadgroup")}}},
		[]*Launch{l})
	if res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	for i, v := range f32s(l.Buffers[0]) {
		if v != float32(i) {
			t.Fatalf("element %d = %v, want %d", i, v, i)
		}
	}
}

// A source may include <metal_simdgroup>, as MLX's headers do.
func TestMetalSimdgroupHeader(t *testing.T) {
	cc := mslcheck.Require(t)
	src := head + "#include <metal_simdgroup>\nkernel void k(device float* out [[buffer(0)]], uint l [[thread_index_in_simdgroup]]) { out[l] = simd_sum(1.0f); }\n"
	l := &Launch{Groups: [3]int{1, 1, 1}, Group: [3]int{32, 1, 1}, Buffers: [][]byte{make([]byte, 128)}}
	res := buildRun(t, cc, []Kernel{{Name: "k", Source: src, Func: "k", Args: []Arg{Buf(0), Attr("thread_index_in_simdgroup")}}}, []*Launch{l})
	if res[0].Err != nil || f32s(l.Buffers[0])[5] != 32 {
		t.Fatalf("%v %v", res[0].Err, f32s(l.Buffers[0]))
	}
	chk, err := mslcheck.New(cc, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range mslcheck.Modes {
		if err := chk.CheckText(mode, "simdgroup include", src); err != nil {
			t.Error(err)
		}
	}
}

// A dispatchThreads launch whose grid is not a multiple of the threadgroup:
// the last threadgroup is cut short, its threads keep the positions the
// full threadgroup size gives them, and threads_per_threadgroup is the cut
// size. A half ternary with an integer arm converts the integer to half, as
// in Metal.
func TestPartialThreadgroupAndHalfTernary(t *testing.T) {
	cc := mslcheck.Require(t)
	const n, tg = 1000, 64
	ks := []Kernel{
		{Name: "position", Func: "k", Args: []Arg{Buf(0), Attr("thread_position_in_grid"), Attr("threads_per_threadgroup")},
			Source: head + "kernel void k(device float* y, uint i [[thread_position_in_grid]], uint3 tptg [[threads_per_threadgroup]]) {\n  y[i] = float(i) + 10000.0f * float(tptg.x);\n}\n"},
		{Name: "ternary", Func: "h", Args: []Arg{Buf(0), Buf(1), Attr("thread_position_in_grid")},
			Source: head + "kernel void h(device const half* x, device float* y, uint i [[thread_position_in_grid]]) {\n  half v = x[i];\n  half r = v > half(0) ? v : 0;\n  y[i] = r;\n}\n"},
	}
	pos := &Launch{Kernel: 0, Threads: [3]int{n, 1, 1}, Group: [3]int{tg, 1, 1}, Buffers: [][]byte{make([]byte, 4*n)}}
	xs := []uint16{0x3c00, 0xbc00, 0x4000, 0x0000} // 1, -1, 2, 0 in f16
	hb := make([]byte, 2*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint16(hb[2*i:], x)
	}
	tern := &Launch{Kernel: 1, Threads: [3]int{len(xs), 1, 1}, Group: [3]int{4, 1, 1}, Buffers: [][]byte{hb, make([]byte, 4*len(xs))}}
	res := buildRun(t, cc, ks, []*Launch{pos, tern})
	for _, r := range res {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	got := f32s(pos.Buffers[0])
	for i, v := range got {
		size := tg
		if i >= n/tg*tg {
			size = n % tg
		}
		if want := float32(i) + 10000*float32(size); v != want {
			t.Fatalf("element %d: %v, want %v (position %d, threadgroup size %d)", i, v, want, i, size)
		}
	}
	if got, want := f32s(tern.Buffers[1]), []float32{1, 0, 2, 0}; !equal(got, want) {
		t.Fatalf("v > 0 ? v : 0 gave %v, want %v", got, want)
	}
}

func equal(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
