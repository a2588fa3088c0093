package tuner

import "github.com/kerntune/kerntune/kernels"

// lora's naive implementation: t = x·Aᵀ first, then one contraction over
// the depth k + r of [x, t]·[W, s·B]ᵀ, so that every mutation of the
// main product (strides, tails, reads past k) applies to it.
func init() {
	mutants["lora"] = func(p *kernels.Problem, in [][]float32, out []float32, mut string) {
		m, n, k, r := p.Case.Shape[0], p.Case.Shape[1], p.Case.Shape[2], p.Case.Shape[3]
		s := float32(p.Kernel.Scalars["scale"])
		ldw := mutated(mut, "wrong stride", k, k+1)
		t := make([]float32, m*r)
		for i := range m {
			for q := range r {
				var v float32
				for c := range k {
					v += get(in[0], i*k+c) * get(in[2], q*k+c)
				}
				t[i*r+q] = v
			}
		}
		a := func(i, q int) float32 {
			if q < k {
				return get(in[0], i*k+q)
			}
			if q < k+r {
				return t[i*r+q-k]
			}
			return get(in[3], len(in[3])) // past the end of the operands
		}
		b := func(q, j int) float32 {
			if q < k {
				return get(in[1], j*ldw+q)
			}
			return s * get(in[3], j*r+q-k)
		}
		contract(m, n, k+r, a, b, biasOf(p, in, 4), out, mut)
	}
}
