package device_test

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/params/families"
	_ "github.com/kerntune/kerntune/tuner/cpu" // the backends register themselves when imported
	_ "github.com/kerntune/kerntune/tuner/cuda"
	"github.com/kerntune/kerntune/tuner/device"
	_ "github.com/kerntune/kerntune/tuner/metal"
	_ "github.com/kerntune/kerntune/tuner/opencl"
)

// traitProblems lists what is wrong with a registered backend's traits,
// for any backend, the ones not yet written included: its space kind is
// cpu or gpu and fits the API it builds. A built-in backend's kind is also
// the one families.SpaceKind gives its name, which the loaders take for a
// device record that does not say its kind (a file written before the
// record's space field).
func traitProblems(name string) []error {
	builtIn := map[string]bool{"cpu": true, "cuda": true, "metal": true, "opencl": true}
	tr, err := device.TraitsOf(name)
	if err != nil {
		return []error{err}
	}
	var errs []error
	if tr.Space != device.SpaceCPU && tr.Space != device.SpaceGPU {
		errs = append(errs, fmt.Errorf("%s: space %q is neither cpu nor gpu", name, tr.Space))
	}
	if kind := families.SpaceKind(name); builtIn[name] && kind != tr.Space {
		errs = append(errs, fmt.Errorf("%s: space %q, but files written before the space field read it as %q (families.SpaceKind)", name, tr.Space, kind))
	}
	if tr.Space == device.SpaceGPU && !slices.Contains(gpu.APIs, tr.API) {
		errs = append(errs, fmt.Errorf("%s: a GPU backend builds API %q, not one of %v", name, tr.API, gpu.APIs))
	}
	if tr.Space == device.SpaceCPU && tr.API != "" {
		errs = append(errs, fmt.Errorf("%s: a CPU backend builds no GPU API, not %q", name, tr.API))
	}
	return errs
}

// Every registered backend, whichever they are, has traits the layers
// above can use.
func TestEveryBackendsTraits(t *testing.T) {
	names := device.Backends()
	if len(names) == 0 {
		t.Fatal("no backend registered")
	}
	for _, name := range names {
		for _, err := range traitProblems(name) {
			t.Error(err)
		}
	}
}

// A trial backend added the way the docs say (registered under a name that
// is not its API's, with an option) needs no table: its traits, its space
// kind taken from its API, pass the check; it opens with the options it
// takes alone, and auto tries it in its rank.
func TestTrialBackend(t *testing.T) {
	var got device.Options
	device.RegisterOptions("trial", func(o device.Options) (device.Backend, error) {
		got = o
		return nil, fmt.Errorf("trial: %w", device.ErrUnavailable)
	}, device.Traits{API: gpu.CUDA, Options: []string{"trial_opt"}, AutoRank: 99})
	t.Cleanup(func() { device.Unregister("trial") })

	if errs := traitProblems("trial"); len(errs) != 0 {
		t.Errorf("the traits check of a backend the loaders do not know: %v", errs)
	}
	if tr, _ := device.TraitsOf("trial"); tr.Space != device.SpaceGPU {
		t.Errorf("a backend that builds CUDA sources got space %q, want %q", tr.Space, device.SpaceGPU)
	}
	if _, err := device.OpenWith("trial", device.Options{"trial_opt": "1", device.OptionMathMode: "fast"}); !errors.Is(err, device.ErrUnavailable) {
		t.Errorf("OpenWith: %v", err)
	}
	if len(got) != 1 || got["trial_opt"] != "1" {
		t.Errorf("the trial backend opened with %v, want its own option alone", got)
	}
	var skipped []string
	b := device.OpenAuto(device.SpaceGPU, func(name string) (device.Backend, error) {
		return nil, fmt.Errorf("%s: %w", name, device.ErrUnavailable)
	}, func(name string, _ error) { skipped = append(skipped, name) })
	if b != nil || len(skipped) == 0 || skipped[len(skipped)-1] != "trial" {
		t.Errorf("auto tried %v, want the trial backend last", skipped)
	}
}

// The documented defaults: --isolate on for cuda, metal, opencl and off
// for cpu; auto tries metal on macOS, else cuda, else cpu, never opencl.
func TestTraitsKeepTheCLIDefaults(t *testing.T) {
	for name, want := range map[string]bool{"cpu": false, "cuda": true, "metal": true, "opencl": true} {
		if tr, _ := device.TraitsOf(name); tr.Isolate != want {
			t.Errorf("%s: isolate by default %t, want %t", name, tr.Isolate, want)
		}
	}
	all, gpus := []string{"cuda", "cpu"}, []string{"cuda"}
	if runtime.GOOS == "darwin" {
		all, gpus = []string{"metal", "cuda", "cpu"}, []string{"metal", "cuda"}
	}
	if got := device.AutoOrder(""); !slices.Equal(got, all) {
		t.Errorf("auto order %v, want %v", got, all)
	}
	if got := device.AutoOrder(device.SpaceGPU); !slices.Equal(got, gpus) {
		t.Errorf("auto order of GPU backends %v, want %v", got, gpus)
	}
}

func TestUnknownBackend(t *testing.T) {
	_, err := device.Open("vulkan")
	want := `unknown backend "vulkan" (built in: ` + strings.Join(device.Backends(), ", ") + ")"
	if !errors.Is(err, device.ErrUnknownBackend) || !strings.Contains(err.Error(), want) {
		t.Errorf("Open: %v", err)
	}
	if _, err := device.TraitsOf("vulkan"); !errors.Is(err, device.ErrUnknownBackend) {
		t.Errorf("TraitsOf: %v", err)
	}
	if _, err := device.TraitsOf("cpu"); err != nil {
		t.Errorf("TraitsOf(cpu): %v", err)
	}
}
