package kernels

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/bf16"
)

// bf16Gemv is y = x·Wᵀ as a bf16 kernel computes it: bf16 inputs, products
// summed in acc (f32, or rounded to bf16 after every add when accBF16),
// each output rounded to bf16; shift reads W one element off along k.
func bf16Gemv(n, k int, x, w []float32, accBF16 bool, shift int) []float32 {
	y := make([]float32, n)
	for j := 0; j < n; j++ {
		var s float32
		for p := 0; p < k; p++ {
			s += x[p] * w[j*k+(p+shift)%k]
			if accBF16 {
				s = bf16.Round(s)
			}
		}
		y[j] = bf16.Round(s)
	}
	return y
}

// TestBF16Tolerance documents BF16Tolerance: a realistic reduction in bf16
// storage with f32 accumulation (gemv over k = 4864 and 896, the Qwen
// decode shapes, and a GEMM) leaves an error near 0.45u (u = 2⁻⁸, the
// rounding of each output) and passes; the same reduction one element off,
// one output element dropped, or summed in a bf16 accumulator fails.
func TestBF16Tolerance(t *testing.T) {
	if BF16.Tolerance() != BF16Tolerance || BF16.Size() != 2 || !BF16.Half() {
		t.Fatalf("bf16: tolerance %g, size %d", BF16.Tolerance(), BF16.Size())
	}
	u := math.Ldexp(1, -8)
	if tol := BF16.Tolerance(); tol < 1.5*u || tol > 3*u {
		t.Errorf("bf16 tolerance %g is not about 2u (u = %g)", tol, u)
	}
	if tol := F16.Tolerance(); tol < 1.5*math.Ldexp(1, -11) || tol > 3*math.Ldexp(1, -11) {
		t.Errorf("f16 tolerance %g is not about 2u of f16", tol)
	}
	k, _ := Get("gemv_nt")
	for _, shape := range [][]int{{1, 896, 4864}, {1, 4864, 896}, {1, 1152, 896}} {
		p, err := NewProblem(k, BF16, Case{Shape: shape}, rand.New(rand.NewPCG(3, uint64(shape[2]))))
		if err != nil {
			t.Fatal(err)
		}
		n, kk := shape[1], shape[2]
		for _, v := range p.Inputs[1][:1000] {
			if bf16.Round(v) != v {
				t.Fatalf("input %v is not a bf16 value", v)
			}
		}
		ref := p.Reference()
		rel := func(y []float32) float64 { r, _ := RelError(y, ref); return r }
		good := bf16Gemv(n, kk, p.Inputs[0], p.Inputs[1], false, 0)
		r := rel(good)
		if err := p.Verify(good); err != nil {
			t.Errorf("%v: f32 accumulation rejected: %v", shape, err)
		}
		if r < 0.2*u || r > u {
			t.Errorf("%v: rounding the outputs left %.3g, expected near 0.45u = %.3g", shape, r, 0.45*u)
		}
		t.Logf("%v bf16, f32 accumulation: relative error %.3g (%.2fu, tolerance %.2fu)", shape, r, r/u, BF16Tolerance/u)
		for _, bad := range []struct {
			name string
			y    []float32
		}{
			{"W one element off along k", bf16Gemv(n, kk, p.Inputs[0], p.Inputs[1], false, 1)},
			{"bf16 accumulator", bf16Gemv(n, kk, p.Inputs[0], p.Inputs[1], true, 0)},
			{"one output element zero", func() []float32 {
				y := append([]float32(nil), good...)
				big := 0
				for i := range y {
					if math.Abs(float64(y[i])) > math.Abs(float64(y[big])) {
						big = i
					}
				}
				y[big] = 0
				return y
			}()},
		} {
			err := p.Verify(bad.y)
			if err == nil || !strings.Contains(err.Error(), "bf16 tolerance") {
				t.Errorf("%v: %s accepted (error %.3g): %v", shape, bad.name, rel(bad.y), err)
			}
			t.Logf("%v bf16, %s: relative error %.3g, rejected", shape, bad.name, rel(bad.y))
		}
	}
}

// Encode and Decode hold bf16 as the upper half of a float32, little-endian,
// rounding to nearest even.
func TestEncodeBF16(t *testing.T) {
	xs := []float32{1, -2.5, 1 + 1.0/256, 1 + 3.0/256, float32(math.Inf(-1))}
	b := Encode(BF16, xs)
	if len(b) != 2*len(xs) {
		t.Fatalf("%d bytes for %d values", len(b), len(xs))
	}
	if b[0] != 0x80 || b[1] != 0x3f {
		t.Errorf("1.0 encodes as % x, want 80 3f", b[:2])
	}
	got := Decode(BF16, b)
	want := []float32{1, -2.5, 1, 1 + 4.0/256, float32(math.Inf(-1))}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%v: decoded %v, want %v", xs[i], got[i], want[i])
		}
	}
	if _, err := ParseDType("bf16"); err != nil {
		t.Error(err)
	}
	if _, err := ParseDType("f64"); err == nil || !strings.Contains(err.Error(), "f32, f16, bf16") {
		t.Errorf("ParseDType error does not list the dtypes: %v", err)
	}
	for _, tt := range []struct {
		dt   DType
		x    float32
		want float32
	}{{F32, 1 + 1.0/4096, 1 + 1.0/4096}, {F16, 1 + 1.0/4096, 1}, {BF16, 1 + 1.0/256, 1}, {BF16, 1 + 1.5/256, 1 + 2.0/256}} {
		if got := tt.dt.Round(tt.x); got != tt.want {
			t.Errorf("%s.Round(%v) = %v, want %v", tt.dt, tt.x, got, tt.want)
		}
	}
}
