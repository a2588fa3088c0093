package cpu

import (
	"github.com/kerntune/kerntune/internal/half"

	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// kernRowParamSets covers every RowsPerTask, Unroll and Threads value.
func kernRowParamSets() []RowParams {
	rpts := []int{1, 2, 4, 8, 16, 64}
	unrolls := []int{1, 2, 4, 8}
	ths := []int{1, 2, 4, 8}
	var ps []RowParams
	for i := 0; i < 8; i++ {
		ps = append(ps, RowParams{RowsPerTask: rpts[i%len(rpts)], Unroll: unrolls[i%4], Threads: ths[(i*3)%4]})
	}
	return ps
}

func kernRefSoftmax(rows, cols int, x []float64) []float64 {
	y := make([]float64, rows*cols)
	for r := 0; r < rows; r++ {
		xr, yr := x[r*cols:(r+1)*cols], y[r*cols:(r+1)*cols]
		m := math.Inf(-1)
		for _, v := range xr {
			m = math.Max(m, v)
		}
		var s float64
		for i, v := range xr {
			yr[i] = math.Exp(v - m)
			s += yr[i]
		}
		for i := range yr {
			yr[i] /= s
		}
	}
	return y
}

func kernRefRMSNorm(rows, cols int, eps float64, x, w []float64) []float64 {
	y := make([]float64, rows*cols)
	for r := 0; r < rows; r++ {
		xr := x[r*cols : (r+1)*cols]
		var ss float64
		for _, v := range xr {
			ss += v * v
		}
		s := 1 / math.Sqrt(ss/float64(cols)+eps)
		for i, v := range xr {
			y[r*cols+i] = v * s * w[i]
		}
	}
	return y
}

// kernSpikeRows puts a few large values in every row so that a softmax
// without the max shift would overflow exp.
func kernSpikeRows(rng *rand.Rand, rows, cols int, x []float32) {
	for r := 0; r < rows; r++ {
		for j := 0; j < 3; j++ {
			x[r*cols+rng.IntN(cols)] = 60 + 40*rng.Float32()
		}
	}
	if rows > 1 {
		x[cols] = 88.5 // exp(88.5) is finite in f32 but near the edge
	}
}

type kernRowShape struct{ rows, cols int }

func kernRowShapes() []kernRowShape {
	s := []kernRowShape{{37, 53}, {1, 1}, {5, 1}, {1, 7}, {3, 0}, {0, 3}, {130, 9}}
	if !kernRaceEnabled {
		s = append(s, kernRowShape{3, 1000}, kernRowShape{70, 4099})
	}
	return s
}

func TestKernSoftmax(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, sh := range kernRowShapes() {
		rows, cols := sh.rows, sh.cols
		for _, spiky := range []bool{false, true} {
			x := kernRandF32(rng, rows*cols)
			if spiky && cols > 0 {
				kernSpikeRows(rng, rows, cols, x)
			}
			xh := make([]uint16, len(x))
			kernF32ToHalf(xh, x)
			if spiky && cols > 0 {
				for r := 0; r < rows; r++ {
					xh[r*cols] = half.FromFloat32(-60000) // exp underflows to 0
				}
			}
			ref := kernRefSoftmax(rows, cols, kernF32To64(x))
			refH := kernRound64ToHalf(kernRefSoftmax(rows, cols, kernHalfTo64(xh)))
			x0, xh0 := slices.Clone(x), slices.Clone(xh)
			for _, p := range kernRowParamSets() {
				t.Run(fmt.Sprintf("%dx%d/spiky=%v/%+v", rows, cols, spiky, p), func(t *testing.T) {
					kernRunF32(t, "Softmax", rows*cols, ref, func(y []float32) { Softmax(p, rows, cols, x, y) })
					kernRunHalf(t, "SoftmaxHalf", rows*cols, refH, func(y []uint16) { SoftmaxHalf(p, rows, cols, xh, y) })
				})
			}
			kernCheckUnchanged(t, "x", x0, x)
			kernCheckUnchanged(t, "xh", xh0, xh)
		}
	}
}

func TestKernRMSNorm(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const eps = 1e-5
	for _, sh := range kernRowShapes() {
		rows, cols := sh.rows, sh.cols
		x, w := kernRandF32(rng, rows*cols), kernRandF32(rng, cols)
		xh, wh := kernRandHalf(rng, rows*cols), kernRandHalf(rng, cols)
		ref := kernRefRMSNorm(rows, cols, eps, kernF32To64(x), kernF32To64(w))
		refH := kernRound64ToHalf(kernRefRMSNorm(rows, cols, float64(float32(eps)), kernHalfTo64(xh), kernHalfTo64(wh)))
		saved := kernClone([][]float32{x, w})
		savedH := kernClone([][]uint16{xh, wh})
		for _, p := range kernRowParamSets() {
			t.Run(fmt.Sprintf("%dx%d/%+v", rows, cols, p), func(t *testing.T) {
				kernRunF32(t, "RMSNorm", rows*cols, ref, func(y []float32) { RMSNorm(p, rows, cols, eps, x, w, y) })
				kernRunHalf(t, "RMSNormHalf", rows*cols, refH, func(y []uint16) { RMSNormHalf(p, rows, cols, eps, xh, wh, y) })
			})
		}
		kernCheckUnchanged(t, "x", saved[0], x)
		kernCheckUnchanged(t, "w", saved[1], w)
		kernCheckUnchanged(t, "xh", savedH[0], xh)
		kernCheckUnchanged(t, "wh", savedH[1], wh)
	}
}

func TestKernExpf(t *testing.T) {
	worst := 0.0
	for i := 0; i <= 200000; i++ {
		x := float32(-87.3 + (88.7+87.3)*float64(i)/200000)
		got, want := float64(kernExpf(x)), math.Exp(float64(x))
		if e := math.Abs(got-want) / want; e > worst {
			worst = e
		}
	}
	if worst > 3e-7 {
		t.Errorf("kernExpf max relative error %.3g", worst)
	}
	for _, c := range []struct{ x, want float32 }{
		{0, 1}, {-100, 0}, {float32(math.Inf(-1)), 0}, {89, float32(math.Inf(1))},
	} {
		if got := kernExpf(c.x); got != c.want {
			t.Errorf("kernExpf(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	if got := kernExpf(float32(math.NaN())); got == got {
		t.Errorf("kernExpf(NaN) = %v", got)
	}
}
