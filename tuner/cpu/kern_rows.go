package cpu

import "math"

// RowParams are the tuning knobs of the row-wise kernels: RowsPerTask rows
// per work chunk handed to a goroutine, Unroll independent accumulators along
// a row (1, 2, 4 or 8) and Threads goroutines.
type RowParams struct{ RowsPerTask, Unroll, Threads int }

type kernRowFuncs struct {
	max    func(x []float32) float32
	expSum func(x, y []float32, m float32) float32
	sumSq  func(x []float32) float32
}

// kernRowTable holds the row reductions for Unroll 1, 2, 4, 8.
var kernRowTable = [4]kernRowFuncs{
	{kernRowMaxU1, kernExpSumU1, kernSumSqU1},
	{kernRowMaxU2, kernExpSumU2, kernSumSqU2},
	{kernRowMaxU4, kernExpSumU4, kernSumSqU4},
	{kernRowMaxU8, kernExpSumU8, kernSumSqU8},
}

// kernRowKernels rounds Unroll down to an implemented value.
func kernRowKernels(unroll int) *kernRowFuncs { return &kernRowTable[kernPow2Index(unroll, 8)] }

// kernRowMaxU1 returns the maximum of x (len(x) > 0) using one running maximum.
func kernRowMaxU1(x []float32) float32 {
	m0 := x[0]
	for _, v := range x[1:] {
		if v > m0 {
			m0 = v
		}
	}
	return m0
}

// kernExpSumU1 sets y[i] = exp(x[i]-m) and returns the sum (x[i]-m ≤ 0: m is the row max), using one partial sum.
func kernExpSumU1(x, y []float32, m float32) float32 {
	var s0 float32
	y = y[:len(x)]
	for i, v := range x {
		e := float32(0)
		if v -= m; v > kernExpLo {
			e = kernExpCore(v)
		}
		y[i] = e
		s0 += e
	}
	return s0
}

// kernSumSqU1 returns Σ x[i]² using one partial sum.
func kernSumSqU1(x []float32) float32 {
	var s0 float32
	for _, v := range x {
		s0 += v * v
	}
	return s0
}

// kernExpf is a float32 exp with about 1 ulp error: float64 math.Exp costs
// two conversions and a slower evaluation per element. Results below the
// float32 normal range flush to 0.
func kernExpf(x float32) float32 {
	switch {
	case x != x:
		return x
	case x <= kernExpLo:
		return 0
	case x > 88.72283:
		return float32(math.Inf(1))
	case x > 88:
		e := kernExpCore(x * 0.5) // x/2 is exact; 2ⁿ for n = 128 is not a float32
		return e * e
	}
	return kernExpCore(x)
}

// kernExpLo is the smallest argument whose exp is still a normal float32.
const kernExpLo = -87.33654

// kernExpTab holds the bits of 2^(j/64), j = 0..63.
var kernExpTab = func() (t [64]uint32) {
	for j := range t {
		t[j] = math.Float32bits(float32(math.Exp2(float64(j) / 64)))
	}
	return t
}()

// kernExpCore is exp(x) for kernExpLo < x ≤ 88, small enough to be inlined
// into the softmax loops (the callers do the range checks). With
// N = round(x·64/ln2) = 64e + j, exp(x) = 2^e · 2^(j/64) · exp(r) where
// |r| ≤ ln2/128, so a cubic is accurate to ~4e-11 and the error (≤ 2e-7
// relative) comes from the float32 table and the final roundings. That is
// about half the arithmetic of a degree-6 polynomial on |r| ≤ ln2/2.
func kernExpCore(x float32) float32 {
	// Round to nearest with the 1.5·2²³ trick: the low mantissa bits of the
	// sum are N, and no float→int→float round trip is needed.
	const magic = 12582912
	n := x*(64*1.44269504088896341) + magic
	ni := math.Float32bits(n) - 0x4b400000
	n -= magic
	// Cody–Waite: ln2/64 split so that n·(0.693359375/64) is exact.
	r := x - n*(0.693359375/64) + n*(2.12194440e-4/64)
	p := ((0.16666667*r+0.5)*r+1)*r + 1
	// Adding e to the exponent field of 2^(j/64) ∈ [1, 2) scales it by 2^e.
	return p * math.Float32frombits(kernExpTab[ni&63]+(ni>>6)<<23)
}

// kernCheckRows panics, naming the row-wise kernel fn, on a negative size
// or an operand too short: x and y of rows×cols and, where given, the
// weights w of cols (checked between x and y).
func kernCheckRows(fn string, rows, cols, lx, ly int, lw ...int) {
	kernCheckDims(fn, rows, cols)
	kernCheckLen(fn, "x", lx, rows*cols)
	for _, l := range lw {
		kernCheckLen(fn, "w", l, cols)
	}
	kernCheckLen(fn, "y", ly, rows*cols)
}

// kernRowSplit is the rows per task (RowsPerTask, at least 1) and the
// number of tasks of a row-wise kernel over rows.
func kernRowSplit(p RowParams, rows int) (rpt, tasks int) {
	rpt = max(p.RowsPerTask, 1)
	return rpt, (rows + rpt - 1) / rpt
}

// kernRowWorkers is how many goroutines kernRowTasks runs: the bound on
// its worker index, for per-goroutine scratch.
func kernRowWorkers(p RowParams, rows int) int {
	_, tasks := kernRowSplit(p, rows)
	return kernWorkers(p.Threads, tasks)
}

// kernRowTasks runs task(w, r0, r1) for the rows [r0, r1) of each task on
// p.Threads goroutines, w being the goroutine's index.
func kernRowTasks(p RowParams, rows int, task func(w, r0, r1 int)) {
	rpt, tasks := kernRowSplit(p, rows)
	kernParallel(p.Threads, tasks, func(w, t int) {
		task(w, t*rpt, min((t+1)*rpt, rows))
	})
}

// Softmax computes the numerically stable row-wise softmax of x[rows×cols]
// into y: y[r,c] = exp(x[r,c]-max_r) / Σ_c exp(x[r,c]-max_r).
func Softmax(p RowParams, rows, cols int, x, y []float32) {
	kernCheckRows("Softmax", rows, cols, len(x), len(y))
	if cols == 0 {
		return
	}
	kf := kernRowKernels(p.Unroll)
	kernRowTasks(p, rows, func(_, r0, r1 int) {
		for r := r0; r < r1; r++ {
			xr := x[r*cols : r*cols+cols]
			yr := y[r*cols : r*cols+cols]
			m := kf.max(xr)
			inv := 1 / kf.expSum(xr, yr, m)
			for i := range yr {
				yr[i] *= inv
			}
		}
	})
}

// SoftmaxHalf is Softmax with binary16 input and output; each row is widened
// into per-goroutine f32 scratch so the reductions run at f32 speed and the
// exponentials are rounded only once.
func SoftmaxHalf(p RowParams, rows, cols int, x, y []uint16) {
	softmax16(kernF16, "SoftmaxHalf", p, rows, cols, x, y)
}

// SoftmaxBF16 is SoftmaxHalf with bfloat16 input and output.
func SoftmaxBF16(p RowParams, rows, cols int, x, y []uint16) {
	softmax16(kernBF16, "SoftmaxBF16", p, rows, cols, x, y)
}

func softmax16(f *kern16, name string, p RowParams, rows, cols int, x, y []uint16) {
	kernCheckRows(name, rows, cols, len(x), len(y))
	if cols == 0 {
		return
	}
	kf := kernRowKernels(p.Unroll)
	sp := kernGetF32(kernRowWorkers(p, rows) * cols)
	defer kernPutF32(sp)
	scratch := *sp
	kernRowTasks(p, rows, func(w, r0, r1 int) {
		buf := scratch[w*cols : w*cols+cols]
		for r := r0; r < r1; r++ {
			f.toF32(buf, x[r*cols:r*cols+cols])
			m := kf.max(buf)
			inv := 1 / kf.expSum(buf, buf, m)
			for i := range buf {
				buf[i] *= inv
			}
			f.fromF32(y[r*cols:r*cols+cols], buf)
		}
	})
}

// kernSumSqBlocked adds float32 sums of squares of 1024-element blocks in
// float64, so a long row (a 151936-word vocabulary) keeps the accuracy of a
// 1024-term sum; one float32 accumulator over the row misses the f32 tolerance.
func kernSumSqBlocked(sumSq func([]float32) float32, x []float32) float32 {
	var t float64
	for len(x) > 1024 {
		t += float64(sumSq(x[:1024]))
		x = x[1024:]
	}
	return float32(t + float64(sumSq(x)))
}

// kernRMSScale returns 1/sqrt(ss/cols + eps).
func kernRMSScale(ss float32, cols int, eps float32) float32 {
	return 1 / float32(math.Sqrt(float64(ss/float32(cols)+eps)))
}

// RMSNorm computes y[r,c] = x[r,c] / sqrt(mean_c(x[r,:]²) + eps) · w[c].
func RMSNorm(p RowParams, rows, cols int, eps float32, x, w, y []float32) {
	kernCheckRows("RMSNorm", rows, cols, len(x), len(y), len(w))
	if cols == 0 {
		return
	}
	kf := kernRowKernels(p.Unroll)
	w = w[:cols]
	kernRowTasks(p, rows, func(_, r0, r1 int) {
		for r := r0; r < r1; r++ {
			xr := x[r*cols : r*cols+cols]
			yr := y[r*cols : r*cols+cols]
			s := kernRMSScale(kernSumSqBlocked(kf.sumSq, xr), cols, eps)
			yr = yr[:len(xr)]
			wr := w[:len(xr)]
			for i, v := range xr {
				yr[i] = v * s * wr[i]
			}
		}
	})
}

// RMSNormHalf is RMSNorm with binary16 x, w and y; w is widened once per
// call and each row once into per-goroutine scratch.
func RMSNormHalf(p RowParams, rows, cols int, eps float32, x, w, y []uint16) {
	rmsnorm16(kernF16, "RMSNormHalf", p, rows, cols, eps, x, w, y)
}

// RMSNormBF16 is RMSNormHalf with bfloat16 x, w and y.
func RMSNormBF16(p RowParams, rows, cols int, eps float32, x, w, y []uint16) {
	rmsnorm16(kernBF16, "RMSNormBF16", p, rows, cols, eps, x, w, y)
}

func rmsnorm16(f *kern16, name string, p RowParams, rows, cols int, eps float32, x, w, y []uint16) {
	kernCheckRows(name, rows, cols, len(x), len(y), len(w))
	if cols == 0 {
		return
	}
	kf := kernRowKernels(p.Unroll)
	sp := kernGetF32((kernRowWorkers(p, rows) + 1) * cols)
	defer kernPutF32(sp)
	wf, scratch := (*sp)[:cols], (*sp)[cols:]
	f.toF32(wf, w)
	kernRowTasks(p, rows, func(wk, r0, r1 int) {
		buf := scratch[wk*cols : wk*cols+cols]
		for r := r0; r < r1; r++ {
			f.toF32(buf, x[r*cols:r*cols+cols])
			s := kernRMSScale(kernSumSqBlocked(kf.sumSq, buf), cols, eps)
			wr := wf[:len(buf)]
			for i, v := range buf {
				buf[i] = v * s * wr[i]
			}
			f.fromF32(y[r*cols:r*cols+cols], buf)
		}
	})
}
