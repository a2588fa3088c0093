package cpu

// LoraParams are the CPU lora kernel's parameters: BN rows of W per work
// chunk, BM rows of x sharing each row of W as it is read, UNROLL
// independent accumulators along k, and Threads goroutines.
type LoraParams struct{ BN, BM, Unroll, Threads int }

// Lora computes y = x·Wᵀ + s·((x·Aᵀ)·Bᵀ) (+ bias) in f32: x m×k, W n×k,
// A r×k, B n×r, y m×n. t = x·Aᵀ is computed once for all rows, then each
// chunk of BN rows of W is streamed against blocks of BM rows of x.
func Lora(p LoraParams, m, n, k, r int, s float32, x, w, a, b, bias, y []float32) {
	loraCheck("Lora", m, n, k, r, len(x), len(w), len(a), len(b), len(bias), len(y), bias != nil)
	loraF32(p, m, n, k, r, s, x, w, a, b, bias, y, nil)
}

// LoraHalf is Lora with IEEE half storage and f32 accumulation.
func LoraHalf(p LoraParams, m, n, k, r int, s float32, x, w, a, b, bias, y []uint16) {
	lora16(kernF16, "LoraHalf", p, m, n, k, r, s, x, w, a, b, bias, y)
}

// LoraBF16 is Lora with bfloat16 storage and f32 accumulation.
func LoraBF16(p LoraParams, m, n, k, r int, s float32, x, w, a, b, bias, y []uint16) {
	lora16(kernBF16, "LoraBF16", p, m, n, k, r, s, x, w, a, b, bias, y)
}

func loraCheck(name string, m, n, k, r, lx, lw, la, lb, lbias, ly int, hasBias bool) {
	kernCheckDims(name, m, n, k, r)
	kernCheckLen(name, "x", lx, m*k)
	kernCheckLen(name, "w", lw, n*k)
	kernCheckLen(name, "a", la, r*k)
	kernCheckLen(name, "b", lb, n*r)
	kernCheckLen(name, "y", ly, m*n)
	if hasBias {
		kernCheckLen(name, "bias", lbias, n)
	}
}

// lora16 widens x, A, B and bias to f32 once (they are small or reused
// by every chunk) and each row of W as its chunk reads it, and rounds y
// to the storage format at the end.
func lora16(c *kern16, name string, p LoraParams, m, n, k, r int, s float32, x, w, a, b, bias, y []uint16) {
	loraCheck(name, m, n, k, r, len(x), len(w), len(a), len(b), len(bias), len(y), bias != nil)
	nb := 0
	if bias != nil {
		nb = n
	}
	sp := kernGetF32(m*k + r*k + n*r + nb + m*n)
	defer kernPutF32(sp)
	buf := *sp
	xs, buf := buf[:m*k], buf[m*k:]
	as, buf := buf[:r*k], buf[r*k:]
	bs, buf := buf[:n*r], buf[n*r:]
	var bf []float32
	if bias != nil {
		bf, buf = buf[:n], buf[n:]
		c.toF32(bf, bias)
	}
	ys := buf[:m*n]
	c.toF32(xs, x)
	c.toF32(as, a)
	c.toF32(bs, b)
	loraF32(p, m, n, k, r, s, xs, nil, as, bs, bf, ys, func(dst []float32, j int) { c.toF32(dst, w[j*k:(j+1)*k]) })
	c.fromF32(y, ys)
}

// loraF32 is the f32 kernel; widen, when set, reads row j of W into dst
// (w is then unused).
func loraF32(p LoraParams, m, n, k, r int, s float32, x, w, a, b, bias, y []float32, widen func(dst []float32, j int)) {
	bm, bn := max(p.BM, 1), max(p.BN, 1)
	// t = x·Aᵀ, m×r, once: the low-rank projection every chunk reuses.
	tp := kernGetF32(m * r)
	defer kernPutF32(tp)
	t := (*tp)[:m*r]
	kernParallel(p.Threads, m, func(_, i int) {
		xi := x[i*k : (i+1)*k]
		for q := range r {
			t[i*r+q] = loraDot(p.Unroll, xi, a[q*k:(q+1)*k])
		}
	})
	chunks := (n + bn - 1) / bn
	rowBlocks := (m + bm - 1) / bm
	workers := kernWorkers(p.Threads, chunks*rowBlocks)
	var rows []float32
	var rp *[]float32
	if widen != nil {
		rp = kernGetF32(workers * k)
		defer kernPutF32(rp)
		rows = (*rp)[:workers*k]
	}
	kernParallel(p.Threads, chunks*rowBlocks, func(wk, task int) {
		jlo, ilo := (task%chunks)*bn, (task/chunks)*bm
		jhi, ihi := min(jlo+bn, n), min(ilo+bm, m)
		for j := jlo; j < jhi; j++ {
			var wj []float32
			if widen != nil {
				wj = rows[wk*k : (wk+1)*k]
				widen(wj, j)
			} else {
				wj = w[j*k : (j+1)*k]
			}
			bj := b[j*r : (j+1)*r]
			for i := ilo; i < ihi; i++ {
				v := loraDot(p.Unroll, x[i*k:(i+1)*k], wj)
				var l float32
				for q, bv := range bj {
					l += t[i*r+q] * bv
				}
				v += s * l
				if bias != nil {
					v += bias[j]
				}
				y[i*n+j] = v
			}
		}
	})
}

// loraDot is Σ x[p]·w[p] with unroll (1 or 4) independent accumulators.
func loraDot(unroll int, x, w []float32) float32 {
	w = w[:len(x)]
	if unroll < 4 {
		var s float32
		for p, xv := range x {
			s += xv * w[p]
		}
		return s
	}
	var s0, s1, s2, s3 float32
	p := 0
	for ; p+4 <= len(x); p += 4 {
		s0 += x[p] * w[p]
		s1 += x[p+1] * w[p+1]
		s2 += x[p+2] * w[p+2]
		s3 += x[p+3] * w[p+3]
	}
	for ; p < len(x); p++ {
		s0 += x[p] * w[p]
	}
	return (s0 + s1) + (s2 + s3)
}
