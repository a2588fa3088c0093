package cpu

import "fmt"

// QGemvParams are the tuning knobs of QGemv: BN rows of W per work chunk
// handed to a goroutine, Rows output rows computed together so that each
// load of x serves Rows rows (1, 2 or 4) and Threads goroutines.
type QGemvParams struct{ BN, Rows, Threads int }

// kernQGemvStep is the number of values one step of the generated kernels
// covers (qgemvStep in kern_gen.go): group sizes must be multiples of it.
const kernQGemvStep = 16

type kernQGemvFunc func(k, g int, x, xs []float32, w []uint32, sc, bi, y []float32)

// kernQGemvTable holds the kernels by width (2, 4, 8 bits) and Rows (1, 2, 4).
var kernQGemvTable = [3][3]kernQGemvFunc{
	{kernQGemvB2R1, kernQGemvB2R2, kernQGemvB2R4},
	{kernQGemvB4R1, kernQGemvB4R2, kernQGemvB4R4},
	{kernQGemvB8R1, kernQGemvB8R2, kernQGemvB8R4},
}

// kernQGemvSetup checks the shape and the operands' lengths and returns the
// kernel for bits and Rows (rounded down to an implemented value), the words
// per row kw and the groups per row kg.
func kernQGemvSetup(name string, p QGemvParams, m, n, k, bits, g, lx, lw, lsc, lbi, lbias, ly int) (kernQGemvFunc, int, int) {
	kernCheckDims(name, n, k)
	if m < 1 {
		panic(fmt.Sprintf("cpu.%s: m=%d rows of x, need at least 1", name, m))
	}
	b := -1
	switch bits {
	case 2:
		b = 0
	case 4:
		b = 1
	case 8:
		b = 2
	}
	if b < 0 {
		panic(fmt.Sprintf("cpu.%s: bits=%d, need 2, 4 or 8", name, bits))
	}
	if g <= 0 || g%kernQGemvStep != 0 || k%g != 0 {
		panic(fmt.Sprintf("cpu.%s: group size %d must be a positive multiple of %d dividing k=%d", name, g, kernQGemvStep, k))
	}
	kw, kg := k*bits/32, k/g
	kernCheckLen(name, "x", lx, m*k)
	kernCheckLen(name, "w", lw, n*kw)
	kernCheckLen(name, "scales", lsc, n*kg)
	kernCheckLen(name, "biases", lbi, n*kg)
	kernCheckLen(name, "y", ly, m*n)
	if lbias >= 0 {
		kernCheckLen(name, "bias", lbias, n)
	}
	return kernQGemvTable[b][kernPow2Index(p.Rows, 4)], kw, kg
}

// kernGroupSums sets xs[j] to the sum of x over group j of g values,
// summed in float64: the sums serve every row of W. x and xs may hold
// several rows of x, one after another.
func kernGroupSums(xs, x []float32, g int) {
	for j := range xs {
		var s float64
		for _, v := range x[j*g : (j+1)*g] {
			s += float64(v)
		}
		xs[j] = float32(s)
	}
}

// lenOrNone is len(s), or -1 for a nil optional operand.
func lenOrNone[T any](s []T) int {
	if s == nil {
		return -1
	}
	return len(s)
}

// QGemv computes y[m×n] = x[m×k]·dequant(W)ᵀ (+ bias when bias != nil) with
// W in MLX's affine layout: row j holds k bits-bit values q (2, 4 or 8 bits)
// packed into k·bits/32 uint32 words from the lowest bits up, and each group
// of g consecutive values has a scale s and a bias β (scales and biases are
// n × k/g), so that W[j,p] = s·q + β. Per group the kernel accumulates
// s·Σ x·q + β·Σ x in float32, which is the same sum: Σ x is computed once per
// call and q is never dequantised element by element. x and y are
// row-major; a chunk of BN rows of W serves the m rows of x in turn while
// it is in cache, so that the weights are read from memory once.
func QGemv(p QGemvParams, m, n, k, bits, g int, x []float32, w []uint32, scales, biases, bias, y []float32) {
	kern, kw, kg := kernQGemvSetup("QGemv", p, m, n, k, bits, g, len(x), len(w), len(scales), len(biases), lenOrNone(bias), len(y))
	sp := kernGetF32(m * kg)
	defer kernPutF32(sp)
	xs := *sp
	kernGroupSums(xs, x[:m*k], g)
	bn := max(p.BN, 1)
	kernParallel(p.Threads, (n+bn-1)/bn, func(_, t int) {
		lo, hi := t*bn, min((t+1)*bn, n)
		for i := range m {
			yc := y[i*n+lo : i*n+hi]
			kern(k, g, x[i*k:(i+1)*k], xs[i*kg:(i+1)*kg], w[lo*kw:hi*kw], scales[lo*kg:hi*kg], biases[lo*kg:hi*kg], yc)
			if bias != nil {
				for j, b := range bias[lo:hi] {
					yc[j] += b
				}
			}
		}
	})
}

// kernQGemvChunk bounds the rows whose scales and biases a 16-bit QGemv
// widens at a time, so that any BN works with fixed per-goroutine scratch.
const kernQGemvChunk = 64

// QGemvHalf is QGemv with binary16 x, scales, biases, bias and y and f32
// accumulation; the packed words are the same.
func QGemvHalf(p QGemvParams, m, n, k, bits, g int, x []uint16, w []uint32, scales, biases, bias, y []uint16) {
	qgemv16(kernF16, "QGemvHalf", p, m, n, k, bits, g, x, w, scales, biases, bias, y)
}

// QGemvBF16 is QGemv with bfloat16 x, scales, biases, bias and y and f32
// accumulation.
func QGemvBF16(p QGemvParams, m, n, k, bits, g int, x []uint16, w []uint32, scales, biases, bias, y []uint16) {
	qgemv16(kernBF16, "QGemvBF16", p, m, n, k, bits, g, x, w, scales, biases, bias, y)
}

// qgemv16 is QGemv with 16-bit storage in format c: x is widened once per
// call, the scales and biases of kernQGemvChunk rows at a time into the
// goroutine's scratch, and y is rounded from an f32 chunk, for each row of
// x while the chunk's weights and widened scales are in cache.
func qgemv16(c *kern16, name string, p QGemvParams, m, n, k, bits, g int, x []uint16, w []uint32, scales, biases, bias, y []uint16) {
	kern, kw, kg := kernQGemvSetup(name, p, m, n, k, bits, g, len(x), len(w), len(scales), len(biases), lenOrNone(bias), len(y))
	bn := max(p.BN, 1)
	tasks := (n + bn - 1) / bn
	workers := kernWorkers(p.Threads, tasks)
	const ch = kernQGemvChunk
	per := ch * (1 + 2*kg) // y, scales, biases of one chunk
	mk, mg := m*k, m*kg
	sp := kernGetF32(mk + mg + workers*per)
	defer kernPutF32(sp)
	xf, xs, scratch := (*sp)[:mk], (*sp)[mk:mk+mg], (*sp)[mk+mg:]
	c.toF32(xf, x[:mk])
	kernGroupSums(xs, xf, g)
	kernParallel(p.Threads, tasks, func(wk, t int) {
		buf := scratch[wk*per : (wk+1)*per]
		ybuf, sbuf, bbuf := buf[:ch], buf[ch:ch+ch*kg], buf[ch+ch*kg:]
		lo, hi := t*bn, min((t+1)*bn, n)
		for s := lo; s < hi; s += ch {
			e := min(s+ch, hi)
			yc, sc, bi := ybuf[:e-s], sbuf[:(e-s)*kg], bbuf[:(e-s)*kg]
			c.toF32(sc, scales[s*kg:e*kg])
			c.toF32(bi, biases[s*kg:e*kg])
			for i := range m {
				kern(k, g, xf[i*k:(i+1)*k], xs[i*kg:(i+1)*kg], w[s*kw:e*kw], sc, bi, yc)
				if bias != nil {
					for j, b := range bias[s:e] {
						yc[j] += c.one(b)
					}
				}
				c.fromF32(y[i*n+s:i*n+e], yc)
			}
		}
	})
}
