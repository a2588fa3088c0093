package tuner_test

import (
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/params"
	"github.com/kerntune/kerntune/tuner"
	_ "github.com/kerntune/kerntune/tuner/cpu" // the backends register themselves when imported
	_ "github.com/kerntune/kerntune/tuner/cuda"
	_ "github.com/kerntune/kerntune/tuner/metal"
	_ "github.com/kerntune/kerntune/tuner/opencl"
)

// params keeps its own table of space kinds (it imports only the standard
// library); every registered backend's traits must agree with it.
func TestTraitsMatchParamsSpaceKind(t *testing.T) {
	names := tuner.Backends()
	if !slices.Equal(names, []string{"cpu", "cuda", "metal", "opencl"}) {
		t.Fatalf("registered backends %v", names)
	}
	for _, name := range names {
		tr, err := tuner.TraitsOf(name)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Space != params.SpaceKind(name) {
			t.Errorf("%s: space %q, params.SpaceKind says %q", name, tr.Space, params.SpaceKind(name))
		}
		if tr.Space != tuner.SpaceCPU && tr.Space != tuner.SpaceGPU {
			t.Errorf("%s: space %q is neither cpu nor gpu", name, tr.Space)
		}
	}
}

// The documented defaults: --isolate on for cuda, metal, opencl and off
// for cpu; auto tries metal on macOS, else cuda, else cpu, never opencl.
func TestTraitsKeepTheCLIDefaults(t *testing.T) {
	for name, want := range map[string]bool{"cpu": false, "cuda": true, "metal": true, "opencl": true} {
		if tr, _ := tuner.TraitsOf(name); tr.Isolate != want {
			t.Errorf("%s: isolate by default %t, want %t", name, tr.Isolate, want)
		}
	}
	all, gpus := []string{"cuda", "cpu"}, []string{"cuda"}
	if runtime.GOOS == "darwin" {
		all, gpus = []string{"metal", "cuda", "cpu"}, []string{"metal", "cuda"}
	}
	if got := tuner.AutoOrder(""); !slices.Equal(got, all) {
		t.Errorf("auto order %v, want %v", got, all)
	}
	if got := tuner.AutoOrder(tuner.SpaceGPU); !slices.Equal(got, gpus) {
		t.Errorf("auto order of GPU backends %v, want %v", got, gpus)
	}
}

func TestUnknownBackend(t *testing.T) {
	_, err := tuner.Open("vulkan")
	if !errors.Is(err, tuner.ErrUnknownBackend) || !strings.Contains(err.Error(), `unknown backend "vulkan" (built in: cpu, cuda, metal, opencl)`) {
		t.Errorf("Open: %v", err)
	}
	if _, err := tuner.TraitsOf("vulkan"); !errors.Is(err, tuner.ErrUnknownBackend) {
		t.Errorf("TraitsOf: %v", err)
	}
	if _, err := tuner.TraitsOf("cpu"); err != nil {
		t.Errorf("TraitsOf(cpu): %v", err)
	}
}
