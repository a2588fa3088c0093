package spec

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/mslcheck"
	"github.com/kerntune/kerntune/internal/mslemu"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
)

// emuCase is one example candidate run on one shape.
type emuCase struct {
	example string
	cand    map[string]int
	shape   []int
	dt      kernels.DType // "": f32
	options []string
	// edit breaks the body (the check must then fail verification)
	edit func(string) string
	// template rebinds template arguments to other expressions (a broken
	// spec: the check must then fail verification)
	template map[string]string
}

// The MLX examples compute what their float64 references say when their
// generated sources run under MLX's launch (grid in threads, threadgroups
// of min(threadgroup, grid)), emulated on the CPU (internal/mslemu): the
// kernels are checked for results, not only for syntax, off a Mac.
func TestMLXExamplesComputeOnCPU(t *testing.T) {
	cc := mslcheck.Require(t)
	type m = map[string]int
	cases := []emuCase{
		{example: "mlx_qr_col_dot.json", cand: m{"TG": 32, "UNROLL": 4}, shape: []int{33, 7}},
		{example: "mlx_qr_col_dot.json", cand: m{"TG": 64, "UNROLL": 8}, shape: []int{130, 29}},
		{example: "mlx_gemm_av.json", cand: m{"BM": 32, "BN": 8, "BK": 16}, shape: []int{37, 53, 29}},
		{example: "mlx_gemm_av.json", cand: m{"BM": 8, "BN": 16, "BK": 32}, shape: []int{130, 7, 65}},
		// Packed uint32 weights, per-group scales and biases.
		{example: "mlx_qmv4.json", cand: m{"TPR": 8, "ROWS": 4}, shape: []int{9, 128}},
		{example: "mlx_qmv4.json", cand: m{"TPR": 4, "ROWS": 2}, shape: []int{33, 192}, dt: kernels.F16},
		{example: "mlx_qmv4.json", cand: m{"TPR": 16, "ROWS": 1}, shape: []int{33, 192}, dt: kernels.BF16},
		// Atomic outputs of two types, filled with init_value first.
		{example: "mlx_scatter_add.json", cand: m{"TG": 64, "ITEMS": 2}, shape: []int{1000, 7}},
		{example: "mlx_scatter_add.json", cand: m{"TG": 128, "ITEMS": 1}, shape: []int{77, 3}},
		// Two outputs (the second float32 in f16 too), a template dtype,
		// MLX's elem_to_loc on a transposed view of x.
		{example: "mlx_rmsnorm_inv.json", cand: m{"TG": 32}, shape: []int{3, 37}},
		{example: "mlx_rmsnorm_inv.json", cand: m{"TG": 64}, shape: []int{5, 100}, dt: kernels.F16},
		{example: "mlx_rmsnorm_inv.json", cand: m{"TG": 32}, shape: []int{5, 100}, options: []string{stridedOption}},
		{example: "mlx_exp1d.json", cand: m{"TG": 64}, shape: []int{1000}},
		{example: "mlx_exp1d.json", cand: m{"TG": 256}, shape: []int{8}, dt: kernels.F16},
		{example: "mlx_add_one.json", cand: m{"TG": 64}, shape: []int{1000}},
		{example: "mlx_add1d.json", cand: m{"TG": 32}, shape: []int{77}, dt: kernels.F16},
		{example: "mlx_divmap.json", cand: m{"TG": 64}, shape: []int{37, 29}},
		{example: "mlx_twod.json", cand: m{"TX": 8, "TY": 4}, shape: []int{37, 29}},
		{example: "mlx_twod.json", cand: m{"TX": 16, "TY": 2}, shape: []int{3, 7}, dt: kernels.F16},
		// The row length is a template argument from the shape (D = d) and
		// the row count a format placeholder: two shapes, two kernels; a
		// 4-element x is passed in the constant address space, the scale
		// is 0-d.
		{example: "mlx_rowsum_dh.json", cand: m{"TG": 32}, shape: []int{37, 29}},
		{example: "mlx_rowsum_dh.json", cand: m{"TG": 64}, shape: []int{3, 5}, dt: kernels.F16},
		{example: "mlx_rowsum_dh.json", cand: m{"TG": 32}, shape: []int{1, 4}},
		// Teeth: without the tail loop the last rows of Q are dropped;
		// staging A without the slice offset k0 multiplies the first slice
		// of A with every slice of V; nibbles read from the wrong end, all
		// counts in one bin, and a view read as if row-contiguous fail.
		{example: "mlx_qr_col_dot.json", cand: m{"TG": 32, "UNROLL": 4}, shape: []int{33, 7}, edit: func(s string) string {
			return strings.Replace(s, "for (; i < m; ++i) {", "for (; false; ++i) {", 1)
		}},
		{example: "mlx_gemm_av.json", cand: m{"BM": 16, "BN": 16, "BK": 8}, shape: []int{37, 53, 29}, edit: func(s string) string {
			return strings.Replace(s, "A[(row0 + r) * k + k0 + c]", "A[(row0 + r) * k + c]", 1)
		}},
		{example: "mlx_qmv4.json", cand: m{"TPR": 8, "ROWS": 4}, shape: []int{9, 128}, edit: func(s string) string {
			return strings.Replace(s, "(q >> (4 * j))", "(q >> (4 * (7 - j)))", 1)
		}},
		{example: "mlx_scatter_add.json", cand: m{"TG": 64, "ITEMS": 2}, shape: []int{1000, 7}, edit: func(s string) string {
			return strings.Replace(s, "&counts[b]", "&counts[0]", 1)
		}},
		// A 2D index with the wrong row length leaves elements unwritten;
		// the column taken modulo the wrong extent reads the wrong input.
		{example: "mlx_twod.json", cand: m{"TX": 8, "TY": 4}, shape: []int{3, 7}, edit: func(s string) string {
			return strings.Replace(s, "uint idx = g.y * k + g.x;", "uint idx = g.y * n + g.x;", 1)
		}},
		{example: "mlx_divmap.json", cand: m{"TG": 64}, shape: []int{3, 7}, edit: func(s string) string {
			return strings.Replace(s, "uint col = gid % k;", "uint col = gid % n;", 1)
		}},
		// A row length from the wrong dim (D = n) sums the wrong elements.
		{example: "mlx_rowsum_dh.json", cand: m{"TG": 32}, shape: []int{29, 37}, template: map[string]string{"D": "n"}},
		{example: "mlx_rmsnorm_inv.json", cand: m{"TG": 32}, shape: []int{5, 100}, options: []string{stridedOption}, edit: func(s string) string {
			return strings.ReplaceAll(s, "x[elem_to_loc(int64_t(row * cols + c), x_shape, x_strides, x_ndim)]", "x[row * cols + c + 0 * x_shape[0] * x_strides[0] * x_ndim]")
		}},
	}
	var ks []mslemu.Kernel
	var ls []*mslemu.Launch
	var outs [][]int
	var problems []*kernels.Problem
	for i, ec := range cases {
		c := loadExample(t, ec.example)
		if ec.template != nil {
			c = rebindTemplate(t, ec.example, ec.template)
		}
		dt := ec.dt
		if dt == "" {
			dt = kernels.F32
		}
		p, err := kernels.NewProblem(c.Kernel, dt, kernels.Case{Shape: ec.shape, Options: ec.options}, rand.New(rand.NewPCG(uint64(i), 7)))
		if err != nil {
			t.Fatal(err)
		}
		problems = append(problems, p)
		m := *c.Body.MLX
		if ec.edit != nil {
			edited := ec.edit(m.Source)
			if edited == m.Source {
				t.Fatalf("case %d: the edit changed nothing", i)
			}
			m.Source = edited
		}
		body := *c.Body
		body.MLX = &m
		src, err := body.SourceForShape(gpu.Metal, dt, ec.cand, ec.shape)
		if err != nil {
			t.Fatal(err)
		}
		k, l, o := emuRun(t, &body, p, ec.cand)
		k.Name = fmt.Sprintf("%s %s %v", ec.example, dt, ec.cand)
		k.Source = gpu.ForSyntaxCheck(src) // MLX's instantiation as a plain kernel
		l.Kernel = i
		ks = append(ks, k)
		ls = append(ls, l)
		outs = append(outs, o)
	}
	prog, err := mslemu.Build(context.Background(), cc, t.TempDir(), ks)
	if err != nil {
		t.Fatal(err)
	}
	results, err := prog.Run(context.Background(), ls)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range results {
		p := problems[i]
		var got []float32
		if r.Err == nil {
			for j, op := range p.Kernel.OutOperands(p.Case) {
				got = append(got, op.Elem.In(p.DType).Decode(ls[i].Buffers[outs[i][j]], op.Len)...)
			}
		}
		err := r.Err
		if err == nil {
			err = p.Verify(got)
		}
		ec := cases[i]
		switch {
		case ec.edit == nil && ec.template == nil && err != nil:
			t.Errorf("%s %s %v on %v%v: %v", ec.example, p.DType, ec.cand, ec.shape, ec.options, err)
		case (ec.edit != nil || ec.template != nil) && err == nil:
			t.Errorf("%s %v on %v: a broken body passed verification", ec.example, ec.cand, ec.shape)
		case ec.edit != nil || ec.template != nil:
			t.Logf("%s %v on %v, broken body: %v", ec.example, ec.cand, ec.shape, err)
		default:
			t.Logf("%s %v on %v: %d outputs verified", ec.example, ec.cand, ec.shape, len(got))
		}
	}
}

// emuRun binds one case: the inputs, outputs (poisoned, or filled with
// the kernel's init value) and Bytes arguments as buffers in the order of
// MLX's signature, then the attributes, and MLX's launch (a grid in
// threads). It returns the buffers of the outputs too.
func emuRun(t *testing.T, b *gpu.Body, p *kernels.Problem, cand map[string]int) (mslemu.Kernel, *mslemu.Launch, []int) {
	t.Helper()
	consts := b.Consts(p.Case)
	ops := p.Kernel.Inputs(p.Case)
	outs := p.Kernel.OutOperands(p.Case)
	var args []mslemu.Arg
	var bufs [][]byte
	var outBufs []int
	nIn, nOut, nConst := 0, 0, 0
	for _, bd := range b.MLX.Bindings() {
		i := len(bufs)
		switch bd.Kind {
		case gpu.In:
			bufs = append(bufs, ops[nIn].Elem.In(p.DType).Encode(p.Inputs[nIn]))
			if b.MLX.Inputs[bd.Input].Scalar {
				args = append(args, mslemu.Ref(i))
			} else {
				args = append(args, mslemu.Buf(i))
			}
			nIn++
		case gpu.Out:
			e := outs[nOut].Elem.In(p.DType)
			n := outs[nOut].Len
			var init []byte
			if v := p.Kernel.Init; v != nil {
				init = e.Fill(*v, n)
			} else {
				for len(init) < n*e.Size() {
					init = append(init, e.Poison()...)
				}
			}
			bufs = append(bufs, init)
			outBufs = append(outBufs, i)
			args = append(args, mslemu.Buf(i))
			nOut++
		case gpu.Bytes:
			bufs = append(bufs, consts[nConst])
			nConst++
			if bd.Part == gpu.PartNDim {
				args = append(args, mslemu.Ref(i))
			} else {
				args = append(args, mslemu.Buf(i))
			}
		}
	}
	for _, a := range b.MLX.Attributes() {
		if !slices.Contains(mslemu.Attributes(), a) {
			t.Fatalf("the emulation does not provide attribute %s", a)
		}
		args = append(args, mslemu.Attr(a))
	}
	l := b.Geometry(p.Case.Shape, cand)
	fn, err := b.FuncNameForShape(p.DType, cand, p.Case.Shape)
	if err != nil {
		t.Fatal(err)
	}
	k := mslemu.Kernel{Func: fn, Args: args, // ForSyntaxCheck made the instantiation a plain kernel
		Version: cmp.Or(b.Compile.LanguageVersion, mslcheck.DefaultVersion)} // MLX's bfloat helpers need __HAVE_BFLOAT__
	return k, &mslemu.Launch{Threads: l.ThreadGrid, Group: l.Group, Buffers: bufs}, outBufs
}

// rebindTemplate loads an example with some template arguments bound to
// other expressions.
func rebindTemplate(t *testing.T, example string, exprs map[string]string) *Compiled {
	t.Helper()
	data, err := os.ReadFile(examplePath(example))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Decode(data, examplePath(example))
	if err != nil {
		t.Fatal(err)
	}
	changed := 0
	for i, a := range s.Source.MLX.Template {
		if e, ok := exprs[a.Name]; ok {
			s.Source.MLX.Template[i].Value, _ = json.Marshal(e)
			changed++
		}
	}
	if changed != len(exprs) {
		t.Fatalf("%s: template has not all of %v", example, exprs)
	}
	c, err := compile(s, examplePath(example), filepath.Dir(examplePath(example)))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
