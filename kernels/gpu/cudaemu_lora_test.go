package gpu

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
)

// TestCUDAEmulatedLora compiles lora's generated CUDA source for the host
// (warp shuffles emulated, testdata/cudaemu/main_lora.cpp launching it) and
// verifies candidates on the family's odd shapes in every dtype: the rank-r
// projection in shared memory, the K-split reductions, row blocks past m
// and the vector loads, off the GPU.
func TestCUDAEmulatedLora(t *testing.T) {
	needGXX(t)
	k, err := kernels.Get("lora")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Get("lora")
	if err != nil {
		t.Fatal(err)
	}
	cand := func(tg, tpr, bm, cps, vec, unroll int) map[string]int {
		return map[string]int{"TG": tg, "TPR": tpr, "BM": bm, "CPS": cps, "VEC": vec, "UNROLL": unroll}
	}
	cands := []struct {
		p  map[string]int
		dt kernels.DType
	}{
		{cand(128, 32, 1, 1, 1, 1), kernels.F32},
		{cand(128, 8, 4, 2, 1, 2), kernels.F16},
		{cand(256, 16, 16, 4, 1, 2), kernels.BF16},
		{cand(128, 32, 16, 1, 8, 2), kernels.F16}, // VEC 8: only where 8 divides k
		{cand(256, 8, 4, 4, 4, 1), kernels.F32},
	}
	dir := t.TempDir()
	checked := 0
	for i, c := range cands {
		src, err := b.SourceFor(CUDA, c.dt, c.p)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("lora_%d", i)
		bin := emuBuild(t, dir, name, emuSourceMain(t, src, b.Func, "main_lora.cpp"), false)
		ps, _ := k.Space("cuda")
		for j, cs := range k.Odd {
			if ps.Check(cs.Shape, c.p) != nil {
				continue
			}
			if err := emuRunLora(t, dir, bin, k, c.dt, cs, c.p, uint64(10*i+j)); err != nil {
				t.Errorf("lora %s %s %s: %v", c.dt, search.Candidate(c.p).Key(), cs, err)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no lora case ran")
	}
	t.Logf("%d emulated CUDA lora runs verified", checked)
}

// emuRunLora runs a built lora candidate on one case and verifies it
// against the float64 reference.
func emuRunLora(t *testing.T, dir, bin string, k *kernels.Kernel, dt kernels.DType, c kernels.Case, p map[string]int, seed uint64) error {
	t.Helper()
	prob, err := kernels.NewProblem(k, dt, c, rand.New(rand.NewPCG(seed, 7)))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"x", "W", "A", "B", "bias"}
	for i := range files {
		files[i] = filepath.Join(dir, files[i]+".bin")
	}
	for i, in := range prob.Inputs {
		if err := os.WriteFile(files[i], kernels.Encode(dt, in), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !c.Has(kernels.Bias) {
		files[4] = "-"
	}
	b, _ := Get("lora")
	g := b.Geometry(c.Shape, p)
	args := []string{strconv.Itoa(g.Grid[0]), strconv.Itoa(g.Grid[1]), strconv.Itoa(g.Threads)}
	for _, s := range b.Scalars(c, k.Scalars) {
		args = append(args, fmt.Sprint(s))
	}
	yPath := filepath.Join(dir, "y.bin")
	args = append(args, files...)
	args = append(args, yPath, strconv.Itoa(k.OutLen(c.Shape)))
	if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s %v: %v\n%s", bin, args, err, out)
	}
	raw, err := os.ReadFile(yPath)
	if err != nil {
		t.Fatal(err)
	}
	return prob.VerifyFor(kernels.Decode(dt, raw), p)
}
