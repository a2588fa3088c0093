//go:build ignore

// kern_gen.go writes the unrolled kernels kern_gemm_micro.go,
// kern_gemv_kernels.go, kern_qgemv_kernels.go and kern_rows_kernels.go.
// Run it with `go generate` (see kern_gemm.go) after editing a template
// here.
package main

import (
	"fmt"
	"go/format"
	"os"
	"strings"
)

// sb accumulates the file being generated.
var sb strings.Builder

func w(f string, a ...any) { fmt.Fprintf(&sb, f, a...) }

// tree sums names pairwise, which is shorter in latency than a chain.
func tree(names []string) string {
	for len(names) > 1 {
		var n []string
		for i := 0; i < len(names); i += 2 {
			n = append(n, "("+names[i]+" + "+names[i+1]+")")
		}
		names = n
	}
	s := names[0]
	if strings.HasPrefix(s, "(") {
		s = s[1 : len(s)-1]
	}
	return s
}

// gemv writes one GEMV kernel of W element type elem (f32, f16 or bf16):
// R rows at a time, U accumulators per row. f16 W is widened through the
// lookup table, bf16 W by a 16-bit shift (it is a float32's upper half).
func gemv(elem string, R, U int) {
	half := elem == "f16"
	ty, name := "float32", fmt.Sprintf("kernGemvF32R%dU%d", R, U)
	ld := func(s string) string { return s }
	switch elem {
	case "f16":
		ty, name = "uint16", fmt.Sprintf("kernGemvF16R%dU%d", R, U)
		ld = func(s string) string { return "lut[" + s + "]" }
	case "bf16":
		ty, name = "uint16", fmt.Sprintf("kernGemvBF16R%dU%d", R, U)
		ld = func(s string) string { return "math.Float32frombits(uint32(" + s + ") << 16)" }
	}
	w("// %s sets y[i] = x·w[i*k:(i+1)*k] for every i < len(y), %d row(s) at a time\n// with %d accumulator(s) per row.\n", name, R, U)
	w("func %s(k int, x []float32, w []%s, y []float32) {\n", name, ty)
	if half {
		w("\tlut := kernHalfLUT\n")
	}
	w("\tx = x[:k:k]\n\ti := 0\n")
	rowgroup := func(R int) {
		for r := 0; r < R; r++ {
			w("\t\tw%d := w[(i+%d)*k:][:k]\n", r, r)
		}
		var accs []string
		for r := 0; r < R; r++ {
			for u := 0; u < U; u++ {
				accs = append(accs, fmt.Sprintf("s%d%d", r, u))
			}
		}
		w("\t\tvar %s float32\n", strings.Join(accs, ", "))
		w("\t\tp := 0\n")
		// The body always covers S = 8 depth steps (step s feeds
		// accumulator s%U) so that the loop overhead and the spills the
		// scheduler forces on the last step are amortised over 8 steps.
		const S = 8
		w("\t\tfor ; p+%d <= k; p += %d {\n", S, S)
		w("\t\t\txx := x[p : p+%d : p+%d]\n", S, S)
		for r := 0; r < R; r++ {
			w("\t\t\tv%d := w%d[p : p+%d : p+%d]\n", r, r, S, S)
		}
		for u := 0; u < S; u++ {
			op := "="
			if u == 0 {
				op = ":="
			}
			w("\t\t\tx0 %s xx[%d]\n", op, u)
			for r := 0; r < R; r++ {
				w("\t\t\ts%d%d += x0 * %s\n", r, u%U, ld(fmt.Sprintf("v%d[%d]", r, u)))
			}
		}
		w("\t\t}\n")
		{
			w("\t\tfor ; p < k; p++ {\n")
			w("\t\t\tx0 := x[p]\n")
			for r := 0; r < R; r++ {
				w("\t\t\ts%d0 += x0 * %s\n", r, ld(fmt.Sprintf("w%d[p]", r)))
			}
			w("\t\t}\n")
		}
		for r := 0; r < R; r++ {
			var n []string
			for u := 0; u < U; u++ {
				n = append(n, fmt.Sprintf("s%d%d", r, u))
			}
			w("\t\ty[i+%d] = %s\n", r, tree(n))
		}
	}
	rowLoops(R, rowgroup)
}

// rowLoops ends a mat-vec kernel: its loop over groups of R rows (when R >
// 1) and its loop over the rows left, each with the body rowgroup writes.
func rowLoops(R int, rowgroup func(R int)) {
	if R > 1 {
		w("\tfor ; i+%d <= len(y); i += %d {\n", R, R)
		rowgroup(R)
		w("\t}\n")
	}
	w("\tfor ; i < len(y); i++ {\n")
	rowgroup(1)
	w("\t}\n}\n\n")
}

// qgemvStep is the number of quantized values one step of the qgemv
// kernels' inner loop covers: 1, 2 or 4 words at 2, 4 or 8 bits. Every
// group size (32, 64, 128) is a multiple of it.
const qgemvStep = 16

// qgemv writes the quantized GEMV kernel for bits-bit values, R rows at a
// time. Each step unpacks the words holding 16 values of every row with
// shifts and masks (MLX packs from the lowest bits up), multiplies them by
// the 16 values of x the rows share and sums the products as a tree; a
// group's dot product d then enters the row's accumulator as s·d + β·Σx.
func qgemv(bits, R int) {
	name := fmt.Sprintf("kernQGemvB%dR%d", bits, R)
	per := 32 / bits     // values per word
	W := qgemvStep / per // words per step
	mask := 1<<bits - 1
	w("// %s sets y[i] = Σ_g sc[i·kg+g]·(Σ_{p in g} x[p]·q[i,p]) + bi[i·kg+g]·xs[g]\n", name)
	w("// for every i < len(y), with q[i,p] the %d-bit values packed in the row's\n", bits)
	w("// words w[i·kw:(i+1)·kw], kw = k/%d, kg = k/g groups of g values and xs[g]\n", per)
	w("// the sum of x over group g; %d row(s) at a time. g is a multiple of %d.\n", R, qgemvStep)
	w("func %s(k, g int, x, xs []float32, w []uint32, sc, bi, y []float32) {\n", name)
	w("\tkw, kg := k/%d, k/g\n", per)
	w("\tx = x[:k:k]\n\txs = xs[:kg:kg]\n\ti := 0\n")
	rowgroup := func(R int) {
		for r := 0; r < R; r++ {
			w("\t\tw%d := w[(i+%d)*kw:][:kw]\n", r, r)
			w("\t\tsc%d := sc[(i+%d)*kg:][:kg]\n", r, r)
			w("\t\tbi%d := bi[(i+%d)*kg:][:kg]\n", r, r)
		}
		var as, ds []string
		for r := 0; r < R; r++ {
			as = append(as, fmt.Sprintf("a%d", r))
			ds = append(ds, fmt.Sprintf("d%d", r))
		}
		w("\t\tvar %s float32\n", strings.Join(as, ", "))
		w("\t\tfor gi, xsg := range xs {\n")
		w("\t\t\tvar %s float32\n", strings.Join(ds, ", "))
		w("\t\t\tfor p, o := gi*g, gi*g/%d; p < gi*g+g; p, o = p+%d, o+%d {\n", per, qgemvStep, W)
		w("\t\t\t\txx := x[p : p+%d : p+%d]\n", qgemvStep, qgemvStep)
		for r := 0; r < R; r++ {
			w("\t\t\t\tv%d := w%d[o : o+%d : o+%d]\n", r, r, W, W)
		}
		for r := 0; r < R; r++ {
			var terms []string
			for j := 0; j < W; j++ {
				w("\t\t\t\tu%d%d := v%d[%d]\n", r, j, r, j)
				u := fmt.Sprintf("u%d%d", r, j)
				for e := 0; e < per; e++ {
					q := u
					if sh := e * bits; sh > 0 {
						q = fmt.Sprintf("%s>>%d", u, sh)
					}
					if e < per-1 {
						q = fmt.Sprintf("%s&%d", q, mask)
					}
					terms = append(terms, fmt.Sprintf("xx[%d]*float32(%s)", j*per+e, q))
				}
			}
			w("\t\t\t\td%d += %s\n", r, tree(terms))
		}
		w("\t\t\t}\n")
		for r := 0; r < R; r++ {
			w("\t\t\ta%d += sc%d[gi]*d%d + bi%d[gi]*xsg\n", r, r, r, r)
		}
		w("\t\t}\n")
		for r := 0; r < R; r++ {
			w("\t\ty[i+%d] = a%d\n", r, r)
		}
	}
	rowLoops(R, rowgroup)
}

// rows writes the row reductions (max, exp-sum, sum of squares) for U > 1.
func rows(U int) {
	var n []string
	// max
	w("// kernRowMaxU%d returns the maximum of x (len(x) > 0) using %d running maxima.\n", U, U)
	w("func kernRowMaxU%d(x []float32) float32 {\n", U)
	n = nil
	for u := 0; u < U; u++ {
		n = append(n, fmt.Sprintf("m%d", u))
	}
	w("\t%s := %s\n", strings.Join(n, ", "), strings.Repeat("x[0], ", U-1)+"x[0]")
	w("\ti := 0\n\tfor ; i+%d <= len(x); i += %d {\n\t\txx := x[i : i+%d : i+%d]\n", U, U, U, U)
	for u := 0; u < U; u++ {
		w("\t\tif v := xx[%d]; v > m%d {\n\t\t\tm%d = v\n\t\t}\n", u, u, u)
	}
	w("\t}\n\tfor ; i < len(x); i++ {\n\t\tif v := x[i]; v > m0 {\n\t\t\tm0 = v\n\t\t}\n\t}\n")
	for u := 1; u < U; u++ {
		w("\tif m%d > m0 {\n\t\tm0 = m%d\n\t}\n", u, u)
	}
	w("\treturn m0\n}\n\n")
	// exp sum
	n = nil
	for u := 0; u < U; u++ {
		n = append(n, fmt.Sprintf("s%d", u))
	}
	w("// kernExpSumU%d sets y[i] = exp(x[i]-m) and returns the sum (x[i]-m ≤ 0: m is the row max), using %d partial sums.\n", U, U)
	w("func kernExpSumU%d(x, y []float32, m float32) float32 {\n", U)
	w("\tvar %s float32\n", strings.Join(n, ", "))
	w("\ty = y[:len(x)]\n\ti := 0\n\tfor ; i+%d <= len(x); i += %d {\n\t\txx := x[i : i+%d : i+%d]\n\t\tyy := y[i : i+%d : i+%d]\n", U, U, U, U, U, U)
	for u := 0; u < U; u++ {
		w("\t\tv%d, e%d := xx[%d]-m, float32(0)\n\t\tif v%d > kernExpLo {\n\t\t\te%d = kernExpCore(v%d)\n\t\t}\n\t\tyy[%d] = e%d\n\t\ts%d += e%d\n", u, u, u, u, u, u, u, u, u, u)
	}
	w("\t}\n\tfor ; i < len(x); i++ {\n\t\tv, e := x[i]-m, float32(0)\n\t\tif v > kernExpLo {\n\t\t\te = kernExpCore(v)\n\t\t}\n\t\ty[i] = e\n\t\ts0 += e\n\t}\n")
	w("\treturn %s\n}\n\n", tree(n))
	// sum sq
	w("// kernSumSqU%d returns Σ x[i]² using %d partial sums.\n", U, U)
	w("func kernSumSqU%d(x []float32) float32 {\n", U)
	w("\tvar %s float32\n", strings.Join(n, ", "))
	// 8 elements per iteration whatever U, to amortise the loop overhead.
	w("\ti := 0\n\tfor ; i+8 <= len(x); i += 8 {\n\t\txx := x[i : i+8 : i+8]\n")
	for u := 0; u < 8; u++ {
		w("\t\ts%d += xx[%d] * xx[%d]\n", u%U, u, u)
	}
	w("\t}\n\tfor ; i < len(x); i++ {\n\t\ts0 += x[i] * x[i]\n\t}\n")
	w("\treturn %s\n}\n\n", tree(n))
}

// header starts a generated file.
func header() {
	sb.Reset()
	w("// Code generated by kern_gen.go; DO NOT EDIT.\n\npackage cpu\n\n")
}

// emit gofmts the current file and writes it.
func emit(name string) {
	src, err := format.Source([]byte(sb.String()))
	if err != nil {
		panic(err)
	}
	if err := os.WriteFile(name, src, 0o644); err != nil {
		panic(err)
	}
}

// micro writes the MR×NR GEMM micro-kernels with the depth unrolled by U.
func micro() {
	const U = 8 // must equal kernKUnroll
	suffix := ""
	header()
	w("// The micro-kernels below are one template unrolled for each (MR, NR):\n// separate functions keep every accumulator a distinct local, which the\n// compiler can hold in a register (amd64 has 15 usable XMM registers, so the\n// 2×8, 4×4 and 4×8 tiles spill some; they are kept because the tuner decides).\n// Plain a*b+c is used, not math.FMA: without GOAMD64=v3 every math.FMA call\n// carries a CPU-feature branch and measured about 3× slower. The depth loop\n// is unrolled by kernKUnroll so that the loop overhead and the spills Go's\n// scheduler forces on the last unrolled step are amortised.\n\n")
	for _, mr := range []int{1, 2, 4} {
		for _, nr := range []int{4, 8} {
			name := fmt.Sprintf("kernMicro%dx%d%s", mr, nr, suffix)
			w("// %s computes the %d×%d tile c = a·b (or c += a·b when add is set)\n", name, mr, nr)
			w("// from a packed A panel (kc×%d) and B panel (kc×%d); kc is a multiple of %d.\n", mr, nr, U)
			w("func %s(kc int, a, b, c []float32, ldc int, add bool) {\n", name)
			var accs []string
			for i := 0; i < mr; i++ {
				for j := 0; j < nr; j++ {
					accs = append(accs, fmt.Sprintf("c%d%d", i, j))
				}
			}
			w("\tvar %s float32\n", strings.Join(accs, ", "))
			w("\ta = a[:kc*%d]\n\tb = b[:kc*%d]\n", mr, nr)
			w("\tib := 0\n")
			w("\tfor ia := 0; ia+%d <= len(a); ia += %d {\n", mr*U, mr*U)
			w("\t\taa := a[ia : ia+%d : ia+%d]\n", mr*U, mr*U)
			w("\t\tbb := b[ib : ib+%d : ib+%d]\n", nr*U, nr*U)
			w("\t\tib += %d\n", nr*U)
			for u := 0; u < U; u++ {
				var as []string
				for i := 0; i < mr; i++ {
					as = append(as, fmt.Sprintf("a%d", i))
				}
				var ai []string
				for i := 0; i < mr; i++ {
					ai = append(ai, fmt.Sprintf("aa[%d]", u*mr+i))
				}
				op := ":="
				if u > 0 {
					op = "="
				}
				w("\t\t%s %s %s\n", strings.Join(as, ", "), op, strings.Join(ai, ", "))
				for j := 0; j < nr; j++ {
					if mr == 1 {
						w("\t\tc0%d += a0 * bb[%d]\n", j, u*nr+j)
						continue
					}
					bop := ":="
					if u > 0 || j > 0 {
						bop = "="
					}
					w("\t\tbj %s bb[%d]\n", bop, u*nr+j)
					for i := 0; i < mr; i++ {
						w("\t\tc%d%d += a%d * bj\n", i, j, i)
					}
				}
			}
			w("\t}\n")
			w("\tif add {\n")
			for i := 0; i < mr; i++ {
				w("\t\tc%d := c[%d*ldc : %d*ldc+%d : %d*ldc+%d]\n", i, i, i, nr, i, nr)
				for j := 0; j < nr; j++ {
					w("\t\tc%d[%d] += c%d%d\n", i, j, i, j)
				}
			}
			w("\t\treturn\n\t}\n")
			for i := 0; i < mr; i++ {
				w("\tc%d := c[%d*ldc : %d*ldc+%d : %d*ldc+%d]\n", i, i, i, nr, i, nr)
				for j := 0; j < nr; j++ {
					w("\tc%d[%d] = c%d%d\n", i, j, i, j)
				}
			}
			w("}\n\n")
		}
	}
}

func main() {
	micro()
	emit("kern_gemm_micro.go")
	header()
	w("import \"math\"\n\n")
	w("// The GEMV kernels below are one template unrolled for each (Rows, Unroll)\n// and W element type, so that every accumulator is a distinct local the\n// compiler can keep in a register. Each loop iteration covers 8 depth steps,\n// step s adding into accumulator s%%Unroll: that amortises the loop overhead\n// and the spills that Go's scheduler forces on the last step, while Unroll\n// still sets how many independent add chains hide the FP add latency.\n\n")
	for _, elem := range []string{"f32", "f16", "bf16"} {
		for _, R := range []int{1, 2, 4} {
			for _, U := range []int{1, 2, 4, 8} {
				gemv(elem, R, U)
			}
		}
	}
	emit("kern_gemv_kernels.go")
	header()
	w("// The quantized GEMV kernels below are one template unrolled for each\n// width (2, 4, 8 bits) and Rows, so that the accumulators are distinct\n// locals and each step's values of x serve Rows rows. A value is unpacked\n// with a shift and a mask and converted to float32 (a table lookup and\n// float tricks measured no faster); products are summed as a tree per step\n// of %d values, so that the adds of a step do not wait on one another.\n\n", qgemvStep)
	for _, bits := range []int{2, 4, 8} {
		for _, R := range []int{1, 2, 4} {
			qgemv(bits, R)
		}
	}
	emit("kern_qgemv_kernels.go")
	header()
	w("// The row reductions below are one template unrolled for each Unroll, so\n// that the partial results are distinct locals held in registers; Unroll 1,\n// plain range loops, is written by hand in kern_rows.go.\n\n")
	for _, U := range []int{2, 4, 8} {
		rows(U)
	}
	emit("kern_rows_kernels.go")
}
