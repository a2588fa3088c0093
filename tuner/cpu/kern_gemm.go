package cpu

import "math"

// GemmParams are the tuning knobs of the blocked GEMMs (Goto/BLIS layout):
// NC and KC size the packed B block (KC×NC, meant for L2/L3), MC the packed
// A block (MC×KC, meant for L2), MR×NR the register tile of the micro-kernel
// (MR ∈ {1,2,4}, NR ∈ {4,8}) and Threads the goroutines sharing the MC blocks.
type GemmParams struct{ MC, NC, KC, MR, NR, Threads int }

//go:generate go run kern_gen.go

// kernKUnroll is the depth unroll of the micro-kernels; packed panels are
// zero-padded to a multiple of it so the kernels need no remainder loop.
const kernKUnroll = 8

// kernMicroFunc is the signature shared by the micro-kernels.
type kernMicroFunc func(kc int, a, b, c []float32, ldc int, add bool)

// kernMicro returns the micro-kernel for an MR×NR tile.
func kernMicro(mr, nr int) kernMicroFunc {
	switch {
	case mr == 1 && nr == 4:
		return kernMicro1x4
	case mr == 1 && nr == 8:
		return kernMicro1x8
	case mr == 2 && nr == 4:
		return kernMicro2x4
	case mr == 2 && nr == 8:
		return kernMicro2x8
	case mr == 4 && nr == 4:
		return kernMicro4x4
	default:
		return kernMicro4x8
	}
}

// kernGemmOperand describes one input matrix, f32, f16 or bf16 (h with bf
// set). For the A operand
// element (i, p) is at i*ld+p, or at p*ld+i when trans is set (GemmAtB packs
// columns of A so Aᵀ is never formed). For the B operand (p, j) is at p*ld+j.
type kernGemmOperand struct {
	f     []float32
	h     []uint16
	bf    bool
	ld    int
	trans bool
}

// kernGemm is one C[m×n] = A[m×k]·B[k×n] call after parameter normalisation.
type kernGemm struct {
	m, n, k int
	a, b    kernGemmOperand
	c       []float32
	ldc     int

	mc, nc, kc, mr, nr, threads int
	micro                       kernMicroFunc
}

// kernNewGemm normalises p: unsupported register tiles fall back to the
// nearest implemented one, MC/NC become multiples of MR/NR, KC a multiple of
// the depth unroll, and all three are capped by the problem so small calls
// do not allocate blocks sized for large ones.
func kernNewGemm(p GemmParams, m, n, k int) *kernGemm {
	g := &kernGemm{m: m, n: n, k: k}
	g.mr = 1 << kernPow2Index(p.MR, 4)
	g.nr = 4
	if p.NR >= 8 {
		g.nr = 8
	}
	g.mc = min(kernRoundUp(max(p.MC, 1), g.mr), kernRoundUp(m, g.mr))
	g.nc = min(kernRoundUp(max(p.NC, 1), g.nr), kernRoundUp(n, g.nr))
	g.kc = min(kernRoundUp(max(p.KC, 1), kernKUnroll), kernRoundUp(k, kernKUnroll))
	g.threads = max(p.Threads, 1)
	g.micro = kernMicro(g.mr, g.nr)
	return g
}

// kernSplit returns the bounds of part t of [0, n) cut into parts pieces.
func kernSplit(n, parts, t int) (lo, hi int) {
	return n * t / parts, n * (t + 1) / parts
}

// run computes C. The loop nest is the Goto/BLIS one: for each NC column
// block and KC depth block, B is packed once into NR-wide panels (shared by
// all goroutines), then the MC row blocks are handed out; each goroutine packs
// its MC×KC block of A into MR-row panels and sweeps the micro-kernel over it,
// keeping one B panel in L1 while the A block streams from L2.
func (g *kernGemm) run() {
	m, n, k := g.m, g.n, g.k
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		for i := 0; i < m; i++ {
			clear(g.c[i*g.ldc : i*g.ldc+n])
		}
		return
	}
	mc, nc, kc, mr, nr := g.mc, g.nc, g.kc, g.mr, g.nr
	nIC := (m + mc - 1) / mc
	maxPanels := nc / nr
	// With fewer row blocks than threads, split the NR panels too so that
	// every goroutine gets work (each packs its own copy of the A block).
	jsplit := 1
	if nIC < g.threads {
		jsplit = min((g.threads+nIC-1)/nIC, maxPanels)
	}
	workers := kernWorkers(g.threads, nIC*jsplit)

	bp := kernGetF32(kc * nc)
	defer kernPutF32(bp)
	aStride := mc*kc + mr*nr // per-worker A block plus an edge tile
	ap := kernGetF32(workers * aStride)
	defer kernPutF32(ap)
	bbuf, abuf := *bp, *ap

	for jc := 0; jc < n; jc += nc {
		ncb := min(nc, n-jc)
		panels := (ncb + nr - 1) / nr
		for pc := 0; pc < k; pc += kc {
			kcb := min(kc, k-pc)
			kcp := kernRoundUp(kcb, kernKUnroll)
			chunks := min(g.threads, panels)
			kernParallel(g.threads, chunks, func(_, t int) {
				lo, hi := kernSplit(panels, chunks, t)
				g.packB(bbuf, jc, pc, ncb, kcb, kcp, lo, hi)
			})
			js := min(jsplit, panels)
			add := pc > 0
			kernParallel(g.threads, nIC*js, func(w, t int) {
				ic := (t / js) * mc
				mcb := min(mc, m-ic)
				lo, hi := kernSplit(panels, js, t%js)
				buf := abuf[w*aStride : (w+1)*aStride]
				g.packA(buf[:mc*kc], ic, pc, mcb, kcb, kcp)
				g.block(buf[:mc*kc], bbuf, buf[mc*kc:], ic, mcb, jc, ncb, lo, hi, kcp, add)
			})
		}
	}
}

// block runs the micro-kernel over rows [ic, ic+mcb) and B panels [jlo, jhi)
// of the current column block. Edge tiles are computed into tmp (the panels
// are zero-padded) and only their valid part is written to C.
func (g *kernGemm) block(ap, bp, tmp []float32, ic, mcb, jc, ncb, jlo, jhi, kcp int, add bool) {
	mr, nr, ldc := g.mr, g.nr, g.ldc
	c, micro := g.c, g.micro
	tmp = tmp[:mr*nr]
	for jr := jlo; jr < jhi; jr++ {
		j := jr * nr
		cols := min(nr, ncb-j)
		bpanel := bp[j*kcp : (j+nr)*kcp]
		for i := 0; i < mcb; i += mr {
			rows := min(mr, mcb-i)
			apanel := ap[i*kcp : (i+mr)*kcp]
			off := (ic+i)*ldc + jc + j
			if rows == mr && cols == nr {
				micro(kcp, apanel, bpanel, c[off:], ldc, add)
				continue
			}
			micro(kcp, apanel, bpanel, tmp, nr, false)
			for r := 0; r < rows; r++ {
				dst := c[off+r*ldc : off+r*ldc+cols]
				src := tmp[r*nr : r*nr+cols]
				if add {
					for x, v := range src {
						dst[x] += v
					}
				} else {
					copy(dst, src)
				}
			}
		}
	}
}

// packA packs rows [ic, ic+mcb) × depth [pc, pc+kcb) of A into MR-row panels:
// panel element (p, r) at p*MR+r, rows past mcb and depth past kcb zeroed.
// A 16-bit operand is converted here, once per element per block.
func (g *kernGemm) packA(dst []float32, ic, pc, mcb, kcb, kcp int) {
	mr, a := g.mr, &g.a
	lut := kernHalfLUT
	for i := 0; i < mcb; i += mr {
		panel := dst[i*kcp : (i+mr)*kcp]
		rows := min(mr, mcb-i)
		if a.trans {
			// Column i+r of Aᵀ block is contiguous in a row of A: copy MR
			// consecutive elements per depth step.
			for p := 0; p < kcb; p++ {
				off := (pc+p)*a.ld + ic + i
				d := panel[p*mr : p*mr+mr]
				if a.f != nil {
					s := a.f[off : off+rows]
					for r, v := range s {
						d[r] = v
					}
				} else if a.bf {
					s := a.h[off : off+rows]
					for r, h := range s {
						d[r] = math.Float32frombits(uint32(h) << 16)
					}
				} else {
					s := a.h[off : off+rows]
					for r, h := range s {
						d[r] = lut[h]
					}
				}
				clear(d[rows:])
			}
		} else {
			for r := 0; r < rows; r++ {
				off := (ic+i+r)*a.ld + pc
				d := panel[r:]
				if a.f != nil {
					s := a.f[off : off+kcb]
					for p, v := range s {
						d[p*mr] = v
					}
				} else if a.bf {
					s := a.h[off : off+kcb]
					for p, h := range s {
						d[p*mr] = math.Float32frombits(uint32(h) << 16)
					}
				} else {
					s := a.h[off : off+kcb]
					for p, h := range s {
						d[p*mr] = lut[h]
					}
				}
			}
			for r := rows; r < mr; r++ {
				for p := 0; p < kcb; p++ {
					panel[p*mr+r] = 0
				}
			}
		}
		clear(panel[kcb*mr:])
	}
}

// packB packs panels [lo, hi) (NR columns each, starting at column jc) of the
// depth block [pc, pc+kcb) of B: panel element (p, j) at p*NR+j, columns past
// ncb and depth past kcb zeroed.
func (g *kernGemm) packB(dst []float32, jc, pc, ncb, kcb, kcp, lo, hi int) {
	nr, b := g.nr, &g.b
	lut := kernHalfLUT
	for jr := lo; jr < hi; jr++ {
		j := jr * nr
		panel := dst[j*kcp : (j+nr)*kcp]
		cols := min(nr, ncb-j)
		for p := 0; p < kcb; p++ {
			off := (pc+p)*b.ld + jc + j
			d := panel[p*nr : p*nr+nr]
			switch {
			case b.f != nil && cols == 8 && nr == 8:
				*(*[8]float32)(d) = *(*[8]float32)(b.f[off : off+8])
			case b.f != nil && cols == 4 && nr == 4:
				*(*[4]float32)(d) = *(*[4]float32)(b.f[off : off+4])
			case b.f != nil:
				copy(d, b.f[off:off+cols])
				clear(d[cols:])
			case b.bf:
				s := b.h[off : off+cols]
				for x, h := range s {
					d[x] = math.Float32frombits(uint32(h) << 16)
				}
				clear(d[cols:])
			default:
				s := b.h[off : off+cols]
				for x, h := range s {
					d[x] = lut[h]
				}
				clear(d[cols:])
			}
		}
		clear(panel[kcb*nr:])
	}
}

// kernNewGemmAV checks the shapes of C = A·V (kernel name; operand lengths
// la, lv and lc) and returns its GEMM.
func kernNewGemmAV(name string, p GemmParams, m, n, k, la, lv, lc int) *kernGemm {
	kernCheckDims(name, m, n, k)
	kernCheckLen(name, "a", la, m*k)
	kernCheckLen(name, "v", lv, k*n)
	kernCheckLen(name, "c", lc, m*n)
	return kernNewGemm(p, m, n, k)
}

// kernNewGemmAtB checks the shapes of Z = Aᵀ·B (kernel name; operand
// lengths la, lb and lz) and returns its GEMM: n×k by m.
func kernNewGemmAtB(name string, p GemmParams, m, n, k, la, lb, lz int) *kernGemm {
	kernCheckDims(name, m, n, k)
	kernCheckLen(name, "a", la, m*n)
	kernCheckLen(name, "b", lb, m*k)
	kernCheckLen(name, "z", lz, n*k)
	return kernNewGemm(p, n, k, m)
}

// GemmAV computes C[m×n] = A[m×k] · V[k×n], all row-major float32.
func GemmAV(p GemmParams, m, n, k int, a, v, c []float32) {
	g := kernNewGemmAV("GemmAV", p, m, n, k, len(a), len(v), len(c))
	g.a = kernGemmOperand{f: a, ld: k}
	g.b = kernGemmOperand{f: v, ld: n}
	g.c, g.ldc = c, n
	g.run()
}

// GemmAVHalf is GemmAV with binary16 inputs and output. Inputs are widened
// while packing and C is accumulated in float32 scratch, so only the final
// result is rounded to f16.
func GemmAVHalf(p GemmParams, m, n, k int, a, v, c []uint16) {
	gemmAV16(kernF16, "GemmAVHalf", p, m, n, k, a, v, c)
}

// GemmAVBF16 is GemmAV with bfloat16 inputs and output (f32 accumulate).
func GemmAVBF16(p GemmParams, m, n, k int, a, v, c []uint16) {
	gemmAV16(kernBF16, "GemmAVBF16", p, m, n, k, a, v, c)
}

func gemmAV16(f *kern16, name string, p GemmParams, m, n, k int, a, v, c []uint16) {
	g := kernNewGemmAV(name, p, m, n, k, len(a), len(v), len(c))
	g.a = kernGemmOperand{h: a, bf: f.bf16, ld: k}
	g.b = kernGemmOperand{h: v, bf: f.bf16, ld: n}
	g.runHalf(c, f)
}

// GemmAtB computes Z[n×k] = Aᵀ · B with A m×n and B m×k, all row-major
// float32. Aᵀ is never formed: packing reads A's rows as Aᵀ's columns.
func GemmAtB(p GemmParams, m, n, k int, a, b, z []float32) {
	g := kernNewGemmAtB("GemmAtB", p, m, n, k, len(a), len(b), len(z))
	g.a = kernGemmOperand{f: a, ld: n, trans: true}
	g.b = kernGemmOperand{f: b, ld: k}
	g.c, g.ldc = z, k
	g.run()
}

// GemmAtBHalf is GemmAtB with binary16 inputs and output (f32 accumulate).
func GemmAtBHalf(p GemmParams, m, n, k int, a, b, z []uint16) {
	gemmAtB16(kernF16, "GemmAtBHalf", p, m, n, k, a, b, z)
}

// GemmAtBBF16 is GemmAtB with bfloat16 inputs and output (f32 accumulate).
func GemmAtBBF16(p GemmParams, m, n, k int, a, b, z []uint16) {
	gemmAtB16(kernBF16, "GemmAtBBF16", p, m, n, k, a, b, z)
}

func gemmAtB16(f *kern16, name string, p GemmParams, m, n, k int, a, b, z []uint16) {
	g := kernNewGemmAtB(name, p, m, n, k, len(a), len(b), len(z))
	g.a = kernGemmOperand{h: a, bf: f.bf16, ld: n, trans: true}
	g.b = kernGemmOperand{h: b, bf: f.bf16, ld: k}
	g.runHalf(z, f)
}

// runHalf runs g into pooled float32 scratch and rounds it into out in
// format f: keeping the partial sums of successive KC blocks in f32 avoids
// one 16-bit rounding per block.
func (g *kernGemm) runHalf(out []uint16, f *kern16) {
	size := g.m * g.n
	cp := kernGetF32(size)
	defer kernPutF32(cp)
	g.c, g.ldc = *cp, g.n
	g.run()
	const chunk = 1 << 14
	tasks := (size + chunk - 1) / chunk
	kernParallel(g.threads, tasks, func(_, t int) {
		lo, hi := t*chunk, min((t+1)*chunk, size)
		f.fromF32(out[lo:hi], g.c[lo:hi])
	})
}
