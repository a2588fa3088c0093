package cpu

// GemvParams are the tuning knobs of GemvNT: BN rows of W per work chunk
// handed to a goroutine, Rows output rows computed together so that each
// load of x serves Rows rows (1, 2 or 4), Unroll independent accumulators per
// row along k (1, 2, 4 or 8) and Threads goroutines.
type GemvParams struct{ BN, Rows, Unroll, Threads int }

type (
	kernGemvF32Func func(k int, x, w, y []float32)
	kernGemvF16Func func(k int, x []float32, w []uint16, y []float32)
)

// kernGemvIndex maps (Rows, Unroll) to a table index, rounding unsupported
// values down to the nearest implemented one.
func kernGemvIndex(rows, unroll int) int {
	return kernPow2Index(rows, 4)*4 + kernPow2Index(unroll, 8)
}

// kernPow2Index is the index in 1, 2, 4, ..., top of the largest of them
// that is at most v (0 below 2): a knob's unsupported values round down to
// the nearest implemented one.
func kernPow2Index(v, top int) int {
	i := 0
	for p := 2; p <= top && v >= p; p *= 2 {
		i++
	}
	return i
}

var kernGemvF32Table = [12]kernGemvF32Func{
	kernGemvF32R1U1, kernGemvF32R1U2, kernGemvF32R1U4, kernGemvF32R1U8,
	kernGemvF32R2U1, kernGemvF32R2U2, kernGemvF32R2U4, kernGemvF32R2U8,
	kernGemvF32R4U1, kernGemvF32R4U2, kernGemvF32R4U4, kernGemvF32R4U8,
}

var kernGemvF16Table = [12]kernGemvF16Func{
	kernGemvF16R1U1, kernGemvF16R1U2, kernGemvF16R1U4, kernGemvF16R1U8,
	kernGemvF16R2U1, kernGemvF16R2U2, kernGemvF16R2U4, kernGemvF16R2U8,
	kernGemvF16R4U1, kernGemvF16R4U2, kernGemvF16R4U4, kernGemvF16R4U8,
}

var kernGemvBF16Table = [12]kernGemvF16Func{
	kernGemvBF16R1U1, kernGemvBF16R1U2, kernGemvBF16R1U4, kernGemvBF16R1U8,
	kernGemvBF16R2U1, kernGemvBF16R2U2, kernGemvBF16R2U4, kernGemvBF16R2U8,
	kernGemvBF16R4U1, kernGemvBF16R4U2, kernGemvBF16R4U4, kernGemvBF16R4U8,
}

// GemvNT computes y[1×n] = x[1×k] · Wᵀ (+ bias when bias != nil) with W n×k
// row-major, i.e. y[j] = Σ_p x[p]·W[j,p] + bias[j]. Every output is one
// contiguous dot product, so the kernel streams W once.
func GemvNT(p GemvParams, n, k int, x, w, bias, y []float32) {
	kernCheckDims("GemvNT", n, k)
	kernCheckLen("GemvNT", "x", len(x), k)
	kernCheckLen("GemvNT", "w", len(w), n*k)
	kernCheckLen("GemvNT", "y", len(y), n)
	if bias != nil {
		kernCheckLen("GemvNT", "bias", len(bias), n)
	}
	kern := kernGemvF32Table[kernGemvIndex(p.Rows, p.Unroll)]
	bn := max(p.BN, 1)
	kernParallel(p.Threads, (n+bn-1)/bn, func(_, t int) {
		lo, hi := t*bn, min((t+1)*bn, n)
		yc := y[lo:hi]
		kern(k, x, w[lo*k:hi*k], yc)
		if bias != nil {
			for i, b := range bias[lo:hi] {
				yc[i] += b
			}
		}
	})
}

// kernGemvChunk bounds the f32 scratch a half GEMV chunk is computed into
// before rounding, so that any BN works with fixed per-goroutine scratch.
const kernGemvChunk = 256

// GemvNTHalf is GemvNT with binary16 x, W, bias and y and f32 accumulation.
// x is widened once per call; W is widened through the lookup table as it is
// streamed, so the kernel reads half the bytes of the f32 one.
func GemvNTHalf(p GemvParams, n, k int, x, w, bias, y []uint16) {
	gemv16(kernF16, "GemvNTHalf", p, n, k, x, w, bias, y)
}

// GemvNTBF16 is GemvNT with bfloat16 x, W, bias and y and f32
// accumulation; W is widened by a shift as it is streamed.
func GemvNTBF16(p GemvParams, n, k int, x, w, bias, y []uint16) {
	gemv16(kernBF16, "GemvNTBF16", p, n, k, x, w, bias, y)
}

// gemv16 is GemvNT with 16-bit storage in format c.
func gemv16(c *kern16, name string, p GemvParams, n, k int, x, w, bias, y []uint16) {
	kernCheckDims(name, n, k)
	kernCheckLen(name, "x", len(x), k)
	kernCheckLen(name, "w", len(w), n*k)
	kernCheckLen(name, "y", len(y), n)
	if bias != nil {
		kernCheckLen(name, "bias", len(bias), n)
	}
	kern := c.gemv[kernGemvIndex(p.Rows, p.Unroll)]
	bn := max(p.BN, 1)
	tasks := (n + bn - 1) / bn
	workers := kernWorkers(p.Threads, tasks)
	sp := kernGetF32(k + workers*kernGemvChunk)
	defer kernPutF32(sp)
	xs, scratch := (*sp)[:k], (*sp)[k:]
	c.toF32(xs, x[:k])
	kernParallel(p.Threads, tasks, func(wk, t int) {
		tmp := scratch[wk*kernGemvChunk : (wk+1)*kernGemvChunk]
		lo, hi := t*bn, min((t+1)*bn, n)
		for s := lo; s < hi; s += kernGemvChunk {
			e := min(s+kernGemvChunk, hi)
			yc := tmp[:e-s]
			kern(k, xs, w[s*k:e*k], yc)
			if bias != nil {
				for i, b := range bias[s:e] {
					yc[i] += c.one(b)
				}
			}
			c.fromF32(y[s:e], yc)
		}
	})
}
