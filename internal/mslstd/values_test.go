package mslstd_test

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

// A value case: body sets float r (lane is the thread's float lane index);
// want is what Metal computes, within tol relative to max(1, |want|).
type valueCase struct {
	body string
	want func(lane int) float64
	tol  float64
}

func c(body string, want float64) valueCase {
	return valueCase{body, func(int) float64 { return want }, 1e-6}
}

func lanes(body string, want func(l int) float64) valueCase { return valueCase{body, want, 0} }

func approx(body string, want, tol float64) valueCase {
	return valueCase{body, func(int) float64 { return want }, tol}
}

// The emulation computes a sample of every family of the table as Metal
// does (Go's math is the reference).
func TestEmulationValues(t *testing.T) {
	cc := mslcheck.Require(t)
	cases := []valueCase{
		// Math, in metal, fast and precise.
		c("r = sin(0.5f);", math.Sin(0.5)),
		c("r = fast::cos(1.25f);", math.Cos(1.25)),
		c("r = precise::exp2(3.5f);", math.Exp2(3.5)),
		c("r = atan2(1.0f, -1.0f);", math.Atan2(1, -1)),
		c("r = floor(-1.5f);", -2),
		c("r = fract(-1.25f);", 0.75),
		c("r = fmod(5.5f, 2.0f);", 1.5),
		c("r = pow(2.0f, 10.0f);", 1024),
		c("r = rsqrt(4.0f);", 0.5),
		c("r = ldexp(1.5f, 3);", 12),
		c("int e; float m = frexp(12.0f, e); r = m + 100 * e;", 0.75+400),
		c("float i; float f = modf(2.75f, i); r = 10 * i + f;", 20.75),
		c("float co; float s = sincos(0.3f, co); r = s + 10 * co;", math.Sin(0.3)+10*math.Cos(0.3)),
		c("r = cospi(0.25f);", math.Cos(math.Pi/4)),
		c("r = fmedian3(3.0f, 1.0f, 2.0f);", 2),
		c("r = exp10(2.0f);", 100),
		c("r = tanh(float2(0.5f, -0.25f)).y;", math.Tanh(-0.25)),
		approx("r = float(exp(half(1.5f)));", math.Exp(1.5), 1e-3),
		approx("r = float(sqrt(bfloat(2.0f)));", math.Sqrt(2), 1e-2),
		c("r = float(isnan(sqrt(-1.0f)));", 1),
		// Common functions.
		c("r = mix(1.0f, 3.0f, 0.25f);", 1.5),
		c("r = smoothstep(0.0f, 2.0f, 0.5f);", 0.15625),
		c("r = step(1.0f, 0.5f) + 10 * sign(-2.0f);", -10),
		c("r = saturate(1.5f) + clamp(5.0f, 0.0f, 2.0f);", 3),
		// Integer functions.
		c("r = float(clz(1u));", 31),
		c("r = float(ctz(8u));", 3),
		c("r = float(popcount(0xF0F0u));", 8),
		c("r = float(addsat(2147483647, 5));", 2147483647),
		c("r = float(subsat(uchar(3), uchar(5)));", 0),
		c("r = float(mulhi(0x80000000u, 4u));", 2),
		c("r = float(rotate(0x80000001u, 1u));", 3),
		c("r = float(extract_bits(0xF0u, 4u, 4u));", 15),
		c("r = float(extract_bits(int(0xF0), 4u, 4u));", -1),
		c("r = float(insert_bits(0u, 5u, 8u, 4u));", 1280),
		c("r = float(reverse_bits(1u));", 2147483648),
		c("r = float(absdiff(-3, 4));", 7),
		c("r = float(hadd(7, 8)) + 10 * float(rhadd(7, 8));", 87),
		c("r = float(median3(5, 1, 3)) + 10 * float(max3(char(1), char(5), char(2)));", 53),
		c("r = float(clamp(int2(-5, 5), int2(0), int2(3)).y);", 3),
		c("r = float(mad24(3, 4, 5) + mul24(2u, 3u));", 23),
		// Relational functions.
		c("float z = 0.0f; r = float(isinf(1.0f / z)) + 10 * float(signbit(-z));", 11),
		c("r = select(1.0f, 2.0f, true) + 10 * select(float2(1), float2(2), bool2(false, true)).x;", 12),
		c("r = float(all(bool2(true, false))) + 10 * float(any(bool2(true, false)));", 10),
		// Geometric functions.
		c("r = dot(float3(1, 2, 3), float3(4, 5, 6));", 32),
		c("r = length(float2(3, 4)) + distance(float2(0), float2(0, 2));", 7),
		c("r = cross(float3(1, 0, 0), float3(0, 1, 0)).z;", 1),
		c("r = normalize(float2(3, 4)).y;", 0.8),
		c("r = reflect(float2(1, -1), float2(0, 1)).y;", 1),
		// Vectors: parts, swizzles, conversions, arithmetic.
		c("float4 v = float4(float2(1, 2), float2(3, 4)); r = v.w + 10 * v.xy.y + 100 * v.rgb.z;", 324),
		c("float4 v = float4(1, 2, 3, 4); v.wz = v.xy; r = v.z + 10 * v.w + 100 * float2(v.yx).x;", 212),
		c("float4 v = float4(1, 2, 3, 4); float3 b = v.zyx + float3(1); v.yx += float2(10, 20); r = b.x + 10 * v.x + 1000 * (v.zw * 2.0f).y;", 8214),
		c("packed_float3 p = packed_float3(1, 2, 3); float3 q = p; r = q.z + 10 * float(sizeof(p)) + 1000 * float(sizeof(q));", 16123),
		c("int3 v = int3(7) % int3(4, 5, 6); r = float(v.x + v.y + v.z);", 6),
		c("half4 h = half4(float4(1.5f)); r = float(float4(h * half4(2)).z);", 3),
		c("r = float((float2(1, 2) < float2(2, 1)).x) + 10 * float((uint2(5) >> 1u).y);", 21),
		// SIMD-group and quad-group functions: 32 lanes.
		lanes("r = simd_sum(lane);", func(int) float64 { return 496 }),
		lanes("r = simd_prefix_exclusive_sum(lane);", func(l int) float64 { return float64(l * (l - 1) / 2) }),
		lanes("r = simd_max(lane) + 100 * simd_min(lane);", func(int) float64 { return 31 }),
		lanes("r = simd_shuffle_rotate_down(lane, ushort(1));", func(l int) float64 { return float64((l + 1) % 32) }),
		lanes("r = simd_shuffle_and_fill_down(lane, lane + 100, ushort(2));", func(l int) float64 {
			if l+2 < 32 {
				return float64(l + 2)
			}
			return float64(l + 2 - 32 + 100)
		}),
		lanes("r = float(ulong(simd_ballot(lane < 3)));", func(int) float64 { return 7 }),
		lanes("r = float(simd_or(1u << (uint(lane) % 8u)));", func(int) float64 { return 255 }),
		lanes("r = quad_sum(lane);", func(l int) float64 { return float64(4*(l/4*4) + 6) }),
		lanes("r = quad_broadcast(lane, ushort(2));", func(l int) float64 { return float64(l/4*4 + 2) }),
		lanes("r = quad_prefix_inclusive_sum(lane);", func(l int) float64 {
			s := 0
			for i := l / 4 * 4; i <= l; i++ {
				s += i
			}
			return float64(s)
		}),
		lanes("r = quad_shuffle_xor(lane, ushort(1));", func(l int) float64 { return float64(l ^ 1) }),
		lanes("r = float(simd_is_first()) + 10 * float(quad_is_first());", func(l int) float64 {
			r := 0.0
			if l == 0 {
				r++
			}
			if l%4 == 0 {
				r += 10
			}
			return r
		}),
		lanes("atomic_fetch_add_explicit(ai, 2, memory_order_relaxed); threadgroup_barrier(mem_flags::mem_device); r = float(atomic_load_explicit(ai, memory_order_relaxed));", func(int) float64 { return 64 }),
	}
	var body strings.Builder
	for i, c := range cases {
		fmt.Fprintf(&body, "  { float r = 0; %s out[tid * %d + %d] = r; }\n", c.body, len(cases), i)
	}
	src := head + "kernel void values(device float* out [[buffer(0)]], device atomic_int* ai [[buffer(1)]],\n" +
		"    uint tid [[thread_index_in_threadgroup]]) {\n  float lane = float(tid);\n" + body.String() + "}\n"
	chk, err := mslcheck.New(cc, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range mslcheck.Modes {
		if err := chk.CheckText(mode, "values", src); err != nil {
			t.Fatal(err)
		}
	}
	p, err := mslemu.Build(context.Background(), cc, t.TempDir(), []mslemu.Kernel{{Name: "values", Source: src, Func: "values",
		Args: []mslemu.Arg{mslemu.Buf(0), mslemu.Buf(1), mslemu.Attr("thread_index_in_threadgroup")}}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 32
	l := &mslemu.Launch{Groups: [3]int{1, 1, 1}, Group: [3]int{n, 1, 1}, Buffers: [][]byte{make([]byte, 4*n*len(cases)), make([]byte, 4)}}
	res, err := p.Run(context.Background(), []*mslemu.Launch{l})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	for lane := 0; lane < n; lane++ {
		for i, c := range cases {
			got := float64(math.Float32frombits(binary.LittleEndian.Uint32(l.Buffers[0][4*(lane*len(cases)+i):])))
			want := c.want(lane)
			tol := max(c.tol, 1e-6) * max(1, math.Abs(want))
			if !(math.Abs(got-want) <= tol) {
				t.Errorf("lane %d: %s gave %v, want %v", lane, c.body, got, want)
			}
		}
	}
}
