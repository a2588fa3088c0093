package tuner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kerntune/kerntune/spec"
	"github.com/kerntune/kerntune/tuner/device"
)

// SpecRunsOn says why spec kernel c cannot run on the named backend
// (naming the spec, the kernel and the backend), or returns nil. The
// backend's traits name the API whose sources it builds, whatever the
// backend is named.
func SpecRunsOn(c *spec.Compiled, backend string) error {
	if t, err := device.TraitsOf(backend); err == nil && t.API != "" && slices.Contains(c.APIs, t.API) {
		return nil
	}
	if c.Body.MLX != nil {
		return fmt.Errorf("%s: kernel %s has an mlx source (MLX's fast.metal_kernel) and runs on the metal backend only, not %s", c.File, c.Kernel.Name, backend)
	}
	apis := make([]string, len(c.APIs))
	for i, a := range c.APIs {
		apis[i] = string(a)
	}
	return fmt.Errorf("%s: kernel %s has sources for %s only; the %s backend cannot build it", c.File, c.Kernel.Name, strings.Join(apis, ", "), backend)
}

// SpecsRunOn says why the spec kernels cannot all run on the named
// backend, or returns nil. The mlx kernels are checked first (they run
// where Metal is built alone, and say so), then that the backend runs GPU
// code at all, then every kernel's sources against the backend's API. The
// mlx kernels alone can be checked before a backend is opened.
func SpecsRunOn(specs []*spec.Compiled, backend string) error {
	for _, c := range specs {
		if c.Body.MLX != nil {
			if err := SpecRunsOn(c, backend); err != nil {
				return err
			}
		}
	}
	if t, err := device.TraitsOf(backend); len(specs) > 0 && (err != nil || t.Space != device.SpaceGPU) {
		return fmt.Errorf("spec kernels are GPU code and the %s backend cannot run them; use --backend %s", backend, gpuBackendList())
	}
	for _, c := range specs {
		if err := SpecRunsOn(c, backend); err != nil {
			return err
		}
	}
	return nil
}

// gpuBackendList names the registered GPU backends: "cuda, metal or opencl".
func gpuBackendList() string {
	var names []string
	for _, n := range device.Backends() {
		if t, _ := device.TraitsOf(n); t.Space == device.SpaceGPU {
			names = append(names, n)
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// MLXSpecs are the specs whose kernel is written for MLX's
// fast.metal_kernel.
func MLXSpecs(specs []*spec.Compiled) []*spec.Compiled {
	var out []*spec.Compiled
	for _, c := range specs {
		if c.Body.MLX != nil {
			out = append(out, c)
		}
	}
	return out
}
