package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/params"
	"github.com/kerntune/kerntune/spec"
	"github.com/kerntune/kerntune/tuner"
)

func init() { commands = append(commands, newCheckCmd) }

// loadSpecs compiles and registers spec files; a bad spec is a usage error
// naming the file, the field and the expression.
func loadSpecs(paths []string) ([]*spec.Compiled, error) {
	var out []*spec.Compiled
	for _, p := range paths {
		c, err := spec.Load(p)
		if err != nil {
			return nil, usageErrorf("--spec: %w", err)
		}
		if err := c.Register(); err != nil {
			return nil, usageErrorf("--spec: %w", err)
		}
		out = append(out, c)
	}
	return out, nil
}

// specFamilies are the spec kernels' families, for params.Options.Families.
func specFamilies(cs []*spec.Compiled) map[string]*params.Family {
	if len(cs) == 0 {
		return nil
	}
	m := map[string]*params.Family{}
	for _, c := range cs {
		m[c.Kernel.Name] = c.Kernel.Family
	}
	return m
}

func newCheckCmd() *cobra.Command {
	var (
		specs   []string
		backend string
		dtypes  []string
		sample  int
	)
	cmd := &cobra.Command{
		Use:   "check --spec FILE [--backend auto|cuda|metal|opencl|none] [--sample N]",
		Short: "Validate a kernel spec, enumerate its space, generate its sources and verify a sample on the GPU",
		Long: `check loads each spec file (every error names the file, the JSON field and the
expression), enumerates the parameter space per shape class, generates the
kernel source of every valid candidate for each API the spec supports,
syntax-checks every Metal source with clang against kerntune's MSL shim
(when a clang is found: $KERNTUNE_CLANG, clang-14 or clang), and, on a GPU
backend, builds every --sample-th valid candidate and verifies it on the
spec's verification shapes against its reference.

A spec with an mlx source (MLX's fast.metal_kernel) runs on the metal
backend only; the other backends reject it.

Spec kernels are GPU code (a body in the GPU dialect, or .cu/.metal/.cl
files), so the cpu backend cannot run them; with --backend auto and no GPU,
check does the static checks only and says so.`,
		Example: `  kerntune check --spec examples/m1_gemv.json
  kerntune check --spec examples/mlx_qr_col_dot.json --backend none
  kerntune check --spec examples/gemm_av.json --backend cuda --sample 1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(specs) == 0 {
				return usageErrorf("check: --spec FILE is required")
			}
			if sample < 0 {
				return usageErrorf("--sample must be at least 0 (0: about 32 candidates per dtype)")
			}
			dts, err := parseDTypes(dtypes...)
			if err != nil {
				return err
			}
			cs, err := loadSpecs(specs)
			if err != nil {
				return err
			}
			out, log := cmd.OutOrStdout(), cmd.ErrOrStderr()
			for _, c := range cs {
				if err := staticCheck(cmd.Context(), out, c); err != nil {
					return err
				}
			}
			if backend == "none" {
				return nil
			}
			if backend != "auto" {
				for _, c := range cs {
					if s := backendSpace(backend); s == "" || (s != tuner.SpaceGPU && c.Body.MLX == nil) {
						continue // openGPUBackend says why no spec kernel runs there (or that the name is unknown)
					}
					if err := specRunsOn(c, backend); err != nil {
						return usageError{fmt.Errorf("--backend %s: %w", backend, err)}
					}
				}
			}
			b, err := openGPUBackend(backend, log)
			if err != nil {
				return err
			}
			if b == nil {
				fmt.Fprintln(out, "device check skipped: no GPU backend could be opened (spec kernels are GPU code; the cpu backend cannot run them; --backend opencl runs them where an OpenCL device is, PoCL on a CPU included)")
				return nil
			}
			defer b.Close()
			info := b.Info()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			tu := tuner.New(b, tuner.Config{})
			failed := 0
			for _, c := range cs {
				if err := specRunsOn(c, info.Backend); err != nil {
					fmt.Fprintf(out, "device check of %s skipped: %v\n", c.Kernel.Name, err)
					continue
				}
				use := dts
				if len(use) == 0 {
					use = c.DTypes()
				}
				for _, dt := range use {
					if !supports(c, dt) {
						return usageErrorf("--dtype %s: %s supports %s", dt, c.File, strings.Join(c.Spec.DTypes, ", "))
					}
					n := sample
					if n == 0 {
						n = max(1, (len(c.Space().Enumerate())+31)/32)
					}
					rep, err := tu.VerifyAll(ctx, c.Kernel, dt, n)
					if err != nil {
						return fmt.Errorf("%s on %s: %w", c.File, info.Key, err)
					}
					fmt.Fprintf(out, "%s %s on %s: %d valid on the device, %d checked (every %d), %d passed, %.1fs\n",
						c.Kernel.Name, dt, info.Key, rep.Valid, rep.Checked, n, rep.Passed, rep.Elapsed.Seconds())
					for _, r := range rep.Reasons() {
						fmt.Fprintf(out, "  %4d× %s (e.g. %s)\n", rep.Failed[r], r, rep.Example[r])
					}
					if rep.Checked == 0 || rep.Passed < rep.Checked {
						failed++
					}
				}
			}
			if failed > 0 {
				return fmt.Errorf("check: %d kernel/dtype pairs had candidates that failed or none checked", failed)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&specs, "spec", nil, "kernel spec file (repeatable)")
	f.StringVar(&backend, "backend", "auto", "GPU backend for the device check: auto, none, "+strings.Join(tuner.Backends(), ", "))
	f.StringArrayVar(&dtypes, "dtype", nil, "element type to verify (repeatable; default: the spec's dtypes)")
	f.IntVar(&sample, "sample", 0, "verify every N-th valid candidate (0: about 32 per dtype; 1: all)")
	return cmd
}

func supports(c *spec.Compiled, dt kernels.DType) bool {
	for _, d := range c.Spec.DTypes {
		if d == string(dt) {
			return true
		}
	}
	return false
}

// openGPUBackend opens a GPU backend for spec kernels: the named one, or
// with "auto" the first GPU backend of tuner.AutoOrder that opens (metal on
// macOS, else cuda); nil when auto finds none.
func openGPUBackend(name string, log io.Writer) (tuner.Backend, error) {
	if name != "auto" {
		if t, err := tuner.TraitsOf(name); err == nil && t.Space != tuner.SpaceGPU {
			return nil, usageErrorf("--backend %s: spec kernels are GPU code (a body in the GPU dialect, or .cu/.metal/.cl files) and the %s backend cannot run them; use cuda, metal, opencl, or none", name, name)
		}
		b, err := tuner.Open(name)
		if err != nil {
			return nil, usageError{fmt.Errorf("--backend %s: %w", name, err)}
		}
		return b, nil
	}
	for _, n := range tuner.AutoOrder(tuner.SpaceGPU) {
		b, err := tuner.Open(n)
		if err == nil {
			return b, nil
		}
		if !errors.Is(err, tuner.ErrUnavailable) {
			fmt.Fprintf(log, "backend %s not used: %v\n", n, err)
		}
	}
	return nil, nil
}

// backendSpace is the kind of parameter space the named backend's
// candidates use (tuner.SpaceGPU for GPU code), "" for an unknown name.
func backendSpace(name string) string {
	t, err := tuner.TraitsOf(name)
	if err != nil {
		return ""
	}
	return t.Space
}

// specRunsOn says why a spec kernel cannot run on a backend (naming the
// spec, the kernel and the backend), or returns nil.
func specRunsOn(c *spec.Compiled, backend string) error {
	if slices.Contains(c.APIs, gpu.API(backend)) {
		return nil
	}
	if c.Body.MLX != nil {
		return fmt.Errorf("%s: kernel %s has an mlx source (MLX's fast.metal_kernel) and runs on the metal backend only, not %s", c.File, c.Kernel.Name, backend)
	}
	return fmt.Errorf("%s: kernel %s has sources for %s only; the %s backend cannot build it", c.File, c.Kernel.Name, apiList(c.APIs), backend)
}

// staticCheck prints the space per class, generates every valid
// candidate's source for each API the spec has, and syntax-checks the
// Metal sources when a clang is found.
func staticCheck(ctx context.Context, w io.Writer, c *spec.Compiled) error {
	k := c.Kernel
	how := "reference expression"
	if c.Base != nil {
		how = "implements " + c.Base.Name + " (its float64 reference)"
	}
	fmt.Fprintf(w, "%s: kernel %s, dims %s, %s; APIs %s\n", c.File, k.Name, strings.Join(k.Dims, "×"), how, apiList(c.APIs))
	ps, _ := k.Space("gpu")
	for _, p := range ps.Params {
		fmt.Fprintf(w, "  param %-8s %s (default %d)\n", p.Name, p.ValuesString(), p.Default)
	}
	all := c.Space().Enumerate()
	fmt.Fprintf(w, "  space: %d points, %d valid for every shape\n", c.Space().Size(), len(all))
	byClass := map[string][][]int{}
	for _, cs := range k.Workload {
		cl, err := k.Classify(cs.Shape)
		if err != nil {
			return fmt.Errorf("%s: %w", c.File, err)
		}
		byClass[cl] = append(byClass[cl], cs.Shape)
	}
	for _, cl := range k.Classes {
		shapes := byClass[cl.Name]
		if len(shapes) == 0 {
			continue
		}
		var names []string
		for _, s := range shapes {
			names = append(names, params.ShapeString(s))
		}
		fmt.Fprintf(w, "  class %-14s %3d valid on %s\n", cl.Name, len(c.Space(shapes...).Enumerate()), strings.Join(names, ", "))
	}
	fmt.Fprintf(w, "  verification shapes: %d\n", len(k.Odd))
	n := 0
	var msl []gpu.MSLSource
	for _, api := range c.APIs {
		for _, dt := range c.DTypes() {
			for _, cand := range all {
				src, err := c.Body.SourceFor(api, dt, cand)
				if err != nil {
					return fmt.Errorf("%s: generating %s source for %s: %w", c.File, api, cand.Key(), err)
				}
				if api == gpu.Metal {
					msl = append(msl, gpu.MSLSource{Name: fmt.Sprintf("%s %s %s", c.Kernel.Name, dt, cand.Key()), Func: c.Body.FuncName(dt, cand), Text: src})
				}
				n++
			}
		}
	}
	fmt.Fprintf(w, "  sources generated: %d (%d candidates × %d dtypes × %d APIs)\n", n, len(all), len(c.DTypes()), len(c.APIs))
	if len(msl) == 0 {
		return nil
	}
	cc, err := gpu.FindClang()
	if err != nil {
		fmt.Fprintf(w, "  MSL syntax check: skipped: %v\n", err)
		return nil
	}
	runs, err := gpu.CheckMSL(ctx, cc, msl)
	if err != nil {
		return fmt.Errorf("%s: %w", c.File, err)
	}
	fmt.Fprintf(w, "  MSL syntax and address-space checks: %d Metal sources passed (every candidate × dtype; %s, %d runs)\n", len(msl), filepath.Base(cc), runs)
	return nil
}

func apiList(apis []gpu.API) string {
	var s []string
	for _, a := range apis {
		s = append(s, string(a))
	}
	return strings.Join(s, ", ")
}
