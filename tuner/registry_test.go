package tuner_test

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/params/families"
	"github.com/kerntune/kerntune/tuner"
	_ "github.com/kerntune/kerntune/tuner/cpu" // the backends register themselves when imported
	_ "github.com/kerntune/kerntune/tuner/cuda"
	_ "github.com/kerntune/kerntune/tuner/metal"
	_ "github.com/kerntune/kerntune/tuner/opencl"
)

// traitProblems lists what is wrong with a registered backend's traits,
// for any backend, the ones not yet written included: its space kind is
// the one families.SpaceKind gives its name (Register sets it from there
// unless the traits name one; the Python loader keeps the same table), and
// a GPU backend names the generated API it builds.
func traitProblems(name string) []error {
	tr, err := tuner.TraitsOf(name)
	if err != nil {
		return []error{err}
	}
	var errs []error
	if tr.Space != tuner.SpaceCPU && tr.Space != tuner.SpaceGPU {
		errs = append(errs, fmt.Errorf("%s: space %q is neither cpu nor gpu", name, tr.Space))
	}
	if kind := families.SpaceKind(name); kind != tr.Space {
		errs = append(errs, fmt.Errorf("%s: space %q, families.SpaceKind says %q (add it to params/families/families.go and python/kerntune_params/families.py)", name, tr.Space, kind))
	}
	if tr.Space == tuner.SpaceGPU && !slices.Contains(gpu.APIs, tr.API) {
		errs = append(errs, fmt.Errorf("%s: a GPU backend builds API %q, not one of %v", name, tr.API, gpu.APIs))
	}
	if tr.Space == tuner.SpaceCPU && tr.API != "" {
		errs = append(errs, fmt.Errorf("%s: a CPU backend builds no GPU API, not %q", name, tr.API))
	}
	return errs
}

// Every registered backend, whichever they are, has traits the layers
// above can use.
func TestEveryBackendsTraits(t *testing.T) {
	names := tuner.Backends()
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
// is not its API's, with an option) is noticed: the traits check names
// the table it has not joined yet; it opens with the options it takes
// alone, and auto tries it in its rank.
func TestTrialBackend(t *testing.T) {
	var got tuner.Options
	tuner.RegisterOptions("trial", func(o tuner.Options) (tuner.Backend, error) {
		got = o
		return nil, fmt.Errorf("trial: %w", tuner.ErrUnavailable)
	}, tuner.Traits{Space: tuner.SpaceGPU, API: gpu.CUDA, Options: []string{"trial_opt"}, AutoRank: 99})
	t.Cleanup(func() { tuner.Unregister("trial") })

	if errs := traitProblems("trial"); len(errs) != 1 || !strings.Contains(errs[0].Error(), "families.SpaceKind") {
		t.Errorf("the traits check of a backend params does not know: %v", errs)
	}
	if _, err := tuner.OpenWith("trial", tuner.Options{"trial_opt": "1", tuner.OptionMathMode: "fast"}); !errors.Is(err, tuner.ErrUnavailable) {
		t.Errorf("OpenWith: %v", err)
	}
	if len(got) != 1 || got["trial_opt"] != "1" {
		t.Errorf("the trial backend opened with %v, want its own option alone", got)
	}
	var skipped []string
	b := tuner.OpenAuto(tuner.SpaceGPU, func(name string) (tuner.Backend, error) {
		return nil, fmt.Errorf("%s: %w", name, tuner.ErrUnavailable)
	}, func(name string, _ error) { skipped = append(skipped, name) })
	if b != nil || len(skipped) == 0 || skipped[len(skipped)-1] != "trial" {
		t.Errorf("auto tried %v, want the trial backend last", skipped)
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
	want := `unknown backend "vulkan" (built in: ` + strings.Join(tuner.Backends(), ", ") + ")"
	if !errors.Is(err, tuner.ErrUnknownBackend) || !strings.Contains(err.Error(), want) {
		t.Errorf("Open: %v", err)
	}
	if _, err := tuner.TraitsOf("vulkan"); !errors.Is(err, tuner.ErrUnknownBackend) {
		t.Errorf("TraitsOf: %v", err)
	}
	if _, err := tuner.TraitsOf("cpu"); err != nil {
		t.Errorf("TraitsOf(cpu): %v", err)
	}
}
