package main

import (
	"strings"
	"testing"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
)

func TestSource(t *testing.T) {
	src, err := source("qgemv", gpu.CUDA, kernels.F16, []string{"TPR=4", "UNROLL=2"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"#define TPR 4\n", "#define UNROLL 2\n", "#define RPB 4\n", "kt_qgemv("} {
		if !strings.Contains(src, want) {
			t.Errorf("the source lacks %q", want)
		}
	}
	for _, bad := range [][]string{{"TPR"}, {"TPR=x"}, {"BM=4"}} {
		if _, err := source("qgemv", gpu.CUDA, kernels.F16, bad); err == nil || !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("%v: error %v, want one naming %q", bad, err, bad[0])
		}
	}
}
