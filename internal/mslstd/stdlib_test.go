package mslstd

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/mslcheck"
	"github.com/kerntune/kerntune/internal/mslemu"
)

// sample are values of each type every function accepts (acosh needs
// x ≥ 1, the others take 1.5 or 3 too).
var sample = map[string]string{
	"float": "1.5f", "half": "half(1.5f)", "bfloat": "bfloat(1.5f)",
	"float2": "float2(1.5f, 2.5f)", "float4": "float4(1.5f, 2.5f, 3.5f, 4.5f)",
	"half2": "half2(half(1.5f), half(2.5f))", "half4": "half4(half(1.5f), half(2.5f), half(3.5f), half(4.5f))",
	"bfloat2": "bfloat2(bfloat(1.5f), bfloat(2.5f))", "bfloat4": "bfloat4(bfloat(1.5f), bfloat(2.5f), bfloat(3.5f), bfloat(4.5f))",
}

// first reads a value of type t as a float (a vector's x).
func first(t, expr string) string {
	if strings.ContainsAny(t[len(t)-1:], "24") {
		return "float((" + expr + ").x)"
	}
	return "float(" + expr + ")"
}

// callEvery is a kernel calling every overload of every entry of the table
// (bfloat's under __HAVE_BFLOAT__), summing what they return.
func callEvery() string {
	var b strings.Builder
	b.WriteString("#include <metal_stdlib>\nusing namespace metal;\n")
	b.WriteString("kernel void every(device float* out [[buffer(0)]], uint tid [[thread_position_in_grid]]) {\n  float acc = 0.0f;\n")
	call := func(t, stmt string) {
		guard := strings.HasPrefix(t, "bfloat")
		if guard {
			b.WriteString("#if defined(__HAVE_BFLOAT__)\n")
		}
		fmt.Fprintf(&b, "  { %s }\n", stmt)
		if guard {
			b.WriteString("#endif\n")
		}
	}
	for _, e := range Entries {
		switch {
		case isFloatKind(e.Kind):
			plain, bf := typesOf(e.Kind)
			for _, t := range append(plain, bf...) {
				v := sample[t]
				s := scalarOf(t)
				var expr string
				switch e.Kind {
				case F1, GeoV1:
					expr = fmt.Sprintf("%s(%s)", e.Name, v)
				case F2, GeoV2:
					expr = fmt.Sprintf("%s(%s, %s)", e.Name, v, v)
				case F3, GeoV3:
					expr = fmt.Sprintf("%s(%s, %s, %s)", e.Name, v, v, v)
				case GeoS1:
					expr, t = fmt.Sprintf("%s(%s)", e.Name, v), s
				case GeoS2:
					expr, t = fmt.Sprintf("%s(%s, %s)", e.Name, v, v), s
				case GeoVS:
					expr = fmt.Sprintf("%s(%s, %s, %s)", e.Name, v, v, sample[s])
				case B1:
					expr, t = fmt.Sprintf("(%s(%s) ? 1.0f : 0.0f)", e.Name, v), "float"
				case B2:
					expr, t = fmt.Sprintf("(%s(%s, %s) ? 1.0f : 0.0f)", e.Name, v, v), "float"
				case FInt:
					expr = fmt.Sprintf("%s(%s, 2)", e.Name, v)
				case FIRef:
					call(t, fmt.Sprintf("int n; acc += float(%s(%s, n)) + float(n);", e.Name, v))
					continue
				case FRef:
					call(t, fmt.Sprintf("%s r; acc += float(%s(%s, r)) + float(r);", t, e.Name, v))
					continue
				case IntF:
					expr, t = fmt.Sprintf("%s(%s)", e.Name, v), "int"
				}
				call(t, "acc += "+first(t, expr)+";")
				if e.Fast && (t == "float" || strings.HasPrefix(t, "float")) && e.Kind != GeoS1 && e.Kind != GeoS2 {
					for _, ns := range []string{"fast", "precise"} {
						call(t, "acc += "+first(t, ns+"::"+expr)+";")
					}
				}
			}
		case e.Kind >= I1 && e.Kind <= I3:
			for _, t := range intScalars {
				args := strings.Repeat(fmt.Sprintf("%s(3), ", t), int(e.Kind-I1)+1)
				call(t, fmt.Sprintf("acc += float(%s(%s));", e.Name, strings.TrimSuffix(args, ", ")))
			}
		case e.Kind == Sel:
			for _, t := range append(append([]string{}, floatScalars...), intScalars...) {
				call(t, fmt.Sprintf("acc += float(select(%s(1), %s(2), tid == 0));", t, t))
			}
		case e.Kind == SIMD1:
			t := "float"
			if strings.HasSuffix(e.Name, "_and") || strings.HasSuffix(e.Name, "_or") || strings.HasSuffix(e.Name, "_xor") {
				t = "uint"
			}
			call(t, fmt.Sprintf("acc += float(%s(%s(tid)));", e.Name, t))
		case e.Kind == SIMDLane:
			call("float", fmt.Sprintf("acc += %s(float(tid), ushort(1));", e.Name))
		case e.Kind == SIMDBool:
			call("float", fmt.Sprintf("acc += %s(tid < 100) ? 1.0f : 0.0f;", e.Name))
		case e.Kind == SIMDNone:
			call("float", fmt.Sprintf("acc += %s() ? 1.0f : 0.0f;", e.Name))
		}
	}
	b.WriteString("  out[tid] = acc;\n}\n")
	return b.String()
}

// Every entry of the table compiles in both clang check modes, with and
// without bfloat, and in the emulation, which runs it.
func TestEveryEntryCompilesAndRuns(t *testing.T) {
	cc := mslcheck.Require(t)
	src := callEvery()
	withBF := strings.Replace(src, "using namespace metal;\n", "using namespace metal;\n#define __HAVE_BFLOAT__ 1\n", 1)
	chk, err := mslcheck.New(cc, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range mslcheck.Modes {
		for name, text := range map[string]string{"without bfloat": src, "with bfloat": withBF} {
			if err := chk.CheckText(mode, name, text); err != nil {
				t.Errorf("%s: %v", mode, err)
			}
		}
	}
	out := runEmu(t, cc, withBF, "every", 32, 32)
	for i, v := range out {
		if math.IsNaN(float64(v)) && i == 0 {
			t.Logf("lane 0's sum is NaN (a function of the sample outside its domain): it ran")
		}
	}
}

// runEmu runs kernel fn of src in one threadgroup of n threads with an
// output of outs floats.
func runEmu(t *testing.T, cc, src, fn string, n, outs int) []float32 {
	t.Helper()
	prog, err := mslemu.Build(context.Background(), cc, t.TempDir(), []mslemu.Kernel{{
		Name: fn, Source: src, Func: fn, Args: []mslemu.Arg{mslemu.Buf(0), mslemu.Attr("thread_position_in_grid")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	l := &mslemu.Launch{Groups: [3]int{1, 1, 1}, Group: [3]int{n, 1, 1}, Buffers: [][]byte{make([]byte, 4*outs)}}
	res, err := prog.Run(context.Background(), []*mslemu.Launch{l})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	out := make([]float32, outs)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(l.Buffers[0][4*i:]))
	}
	return out
}

// The emulation computes what MSL specifies for a sample of each chapter.
func TestEmulatedValues(t *testing.T) {
	cc := mslcheck.Require(t)
	cases := []struct {
		expr string
		want float64
	}{
		{"sin(0.5f)", math.Sin(0.5)},
		{"fast::exp(1.0f)", math.E},
		{"precise::cos(0.25f)", math.Cos(0.25)},
		{"float(floor(half(2.5f)))", 2},
		{"exp2(3.0f)", 8},
		{"log2(8.0f)", 3},
		{"atan2(1.0f, 1.0f)", math.Pi / 4},
		{"float(clz(uint(1)))", 31},
		{"float(popcount(uint(7)))", 3},
		{"float(median3(1, 5, 3))", 3},
		{"dot(float2(1.0f, 2.0f), float2(3.0f, 4.0f))", 11},
		{"length(float2(3.0f, 4.0f))", 5},
		{"smoothstep(0.0f, 1.0f, 0.25f)", 0.15625},
		{"float(rotate(uint(1), uint(31)))", 1 << 31},
		{"fract(-0.25f)", 0.75},
		{"float(addsat(uchar(200), uchar(100)))", 255},
		{"float(subsat(uchar(100), uchar(200)))", 0},
		{"mix(1.0f, 3.0f, 0.25f)", 1.5},
		{"sign(-2.0f)", -1},
		{"select(1.0f, 2.0f, true)", 2},
		{"float(mulhi(uint(0x80000000u), uint(4)))", 2},
		{"sinpi(0.5f)", 1},
		{"float(half(3.0f) * 2)", 6},
		{"float(true ? half(2.0f) : 0)", 2},
		{"float(reverse_bits(uchar(1)))", 128},
	}
	var b strings.Builder
	b.WriteString("#include <metal_stdlib>\nusing namespace metal;\n")
	b.WriteString("kernel void values(device float* out [[buffer(0)]], uint tid [[thread_position_in_grid]]) {\n")
	b.WriteString("  const float s = simd_sum(1.0f), q = quad_sum(float(tid)), p = simd_prefix_exclusive_sum(1.0f);\n")
	b.WriteString("  const uint x = simd_xor(uint(1) << (tid % 4)), r = simd_shuffle_rotate_down(tid, ushort(1));\n")
	b.WriteString("  out[32 + tid] = p + (r == (tid + 1) % 32 ? 0.0f : 1000.0f);\n  if (tid != 0) return;\n")
	b.WriteString("  out[0] = s; out[1] = q; out[2] = float(x);\n")
	for i, c := range cases {
		fmt.Fprintf(&b, "  out[%d] = %s;\n", i+3, c.expr)
	}
	b.WriteString("}\n")
	out := runEmu(t, cc, b.String(), "values", 32, 64)
	if out[0] != 32 || out[1] != 0+1+2+3 || out[2] != 0 {
		t.Errorf("simd_sum(1) = %v (want 32), quad_sum(tid) in quad 0 = %v (want 6), simd_xor = %v (want 0: each bit 8 times)", out[0], out[1], out[2])
	}
	for l := 0; l < 32; l++ {
		if out[32+l] != float32(l) {
			t.Errorf("lane %d: exclusive prefix sum or rotation wrong: %v", l, out[32+l])
		}
	}
	for i, c := range cases {
		got := float64(out[i+3])
		if math.Abs(got-c.want) > 1e-5*math.Max(1, math.Abs(c.want)) {
			t.Errorf("%s = %v, want %v", c.expr, got, c.want)
		}
	}
}

// The check rejects what Metal rejects among overloads: a call whose
// arguments match two overloads equally well.
func TestAmbiguousCallsAreRejected(t *testing.T) {
	cc := mslcheck.Require(t)
	chk, err := mslcheck.New(cc, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		call string
		ok   bool
	}{
		{"min(uint(1), int(2))", false},
		{"max(half(1.0f), 0.5f)", false},
		{"max(half(1.0f), half(0.5f))", true},
		{"min(uint(1), uint(2))", true},
		{"max(1.0f, 0.5f)", true},
	} {
		src := "#include <metal_stdlib>\nusing namespace metal;\nkernel void k(device float* out [[buffer(0)]]) { out[0] = float(" + tt.call + "); }\n"
		for _, mode := range mslcheck.Modes {
			err := chk.CheckText(mode, tt.call, src)
			if (err == nil) != tt.ok {
				t.Errorf("%s, %s check: error %v, want accepted %v", tt.call, mode, err, tt.ok)
			}
		}
	}
}
