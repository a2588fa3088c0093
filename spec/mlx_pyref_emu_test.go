package spec

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/mslcheck"
	"github.com/kerntune/kerntune/internal/mslemu"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
)

// An mlx example whose reference is a NumPy function (a recurrence) and
// whose inputs are drawn normal and positive is verified by the CPU MSL
// emulation against that reference; a body with the recurrence's order of
// operations changed fails.
func TestMLXPythonReferenceOnCPU(t *testing.T) {
	cc := mslcheck.Require(t)
	requireNumpy(t)
	type m = map[string]int
	cases := []emuCase{
		{example: "mlx_ema_scan.json", cand: m{"TG": 32}, shape: []int{9, 37}},
		{example: "mlx_ema_scan.json", cand: m{"TG": 64}, shape: []int{70, 5}, dt: kernels.F16},
		{example: "mlx_ema_scan.json", cand: m{"TG": 64}, shape: []int{70, 5}, dt: kernels.BF16},
		{example: "mlx_ema_scan.json", cand: m{"TG": 32}, shape: []int{9, 37}, edit: func(s string) string {
			return strings.Replace(s, "h = a * h + float(alpha) * float(x[r * n + j]);", "h = a * (h + float(alpha) * float(x[r * n + j]));", 1)
		}},
	}
	var ks []mslemu.Kernel
	var ls []*mslemu.Launch
	var outs [][]int
	var problems []*kernels.Problem
	for i, ec := range cases {
		c := loadExample(t, ec.example)
		dt := ec.dt
		if dt == "" {
			dt = kernels.F32
		}
		p, err := kernels.NewProblem(c.Kernel, dt, kernels.Case{Shape: ec.shape}, rand.New(rand.NewPCG(uint64(i), 11)))
		if err != nil {
			t.Fatal(err)
		}
		problems = append(problems, p)
		mx := *c.Body.MLX
		if ec.edit != nil {
			edited := ec.edit(mx.Source)
			if edited == mx.Source {
				t.Fatalf("case %d: the edit changed nothing", i)
			}
			mx.Source = edited
		}
		body := *c.Body
		body.MLX = &mx
		src, err := body.SourceFor(gpu.Metal, dt, ec.cand)
		if err != nil {
			t.Fatal(err)
		}
		k, l, o := emuRun(t, &body, p, ec.cand)
		k.Name = fmt.Sprintf("%s %s %v", ec.example, dt, ec.cand)
		k.Source = gpu.ForSyntaxCheck(src)
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
		p, ec := problems[i], cases[i]
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
		switch {
		case ec.edit == nil && err != nil:
			t.Errorf("%s %s %v on %v: %v", ec.example, p.DType, ec.cand, ec.shape, err)
		case ec.edit != nil && err == nil:
			t.Errorf("%s %v on %v: a broken body passed verification", ec.example, ec.cand, ec.shape)
		default:
			t.Logf("%s %s %v on %v: %v", ec.example, p.DType, ec.cand, ec.shape, err)
		}
	}
}
