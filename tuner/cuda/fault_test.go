package cuda

import (
	"strings"
	"testing"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/device"
)

// The injected fault lands at the top of the family's kernel, in every family.
func TestInjectFault(t *testing.T) {
	for _, k := range kernels.All() {
		body, err := gpu.Get(k.Name)
		if err != nil {
			t.Fatal(err)
		}
		ps, ok := k.Space("cuda")
		if !ok {
			t.Fatalf("%s has no cuda space", k.Name)
		}
		src, err := body.SourceFor(gpu.CUDA, kernels.F32, search.Candidate(ps.Defaults()))
		if err != nil {
			t.Fatal(err)
		}
		for _, kind := range []string{device.FaultCrash, device.FaultHang} {
			got, err := injectFault(src, body.Func, kind)
			if err != nil {
				t.Fatalf("%s %s: %v", k.Name, kind, err)
			}
			lines := strings.Split(got, "\n")
			ok := false
			for i, l := range lines[:len(lines)-1] {
				if strings.Contains(l, " "+body.Func+"(") && strings.HasSuffix(l, "{") && strings.Contains(lines[i+1], "injected fault") {
					ok = true
				}
			}
			if !ok || strings.Count(got, "injected fault") != 1 {
				t.Errorf("%s %s: the fault is not the first statement of %s", k.Name, kind, body.Func)
			}
		}
	}
	if _, err := injectFault("__global__ void other() {}", "kt_x", device.FaultCrash); err == nil {
		t.Error("a missing kernel was not reported")
	}
}
