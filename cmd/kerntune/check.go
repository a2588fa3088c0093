package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/params/families"
	"github.com/kerntune/kerntune/spec"
	"github.com/kerntune/kerntune/tuner"
	"github.com/kerntune/kerntune/tuner/device"
)

func init() {
	commands = append(commands, func(f *Factory) *cobra.Command { return NewCmdCheck(f, nil) })
}

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
func specFamilies(cs []*spec.Compiled) map[string]*families.Family {
	if len(cs) == 0 {
		return nil
	}
	m := map[string]*families.Family{}
	for _, c := range cs {
		m[c.Kernel.Name] = c.Kernel.Family
	}
	return m
}

// CheckOptions are what check is asked to do: its flags and its streams.
type CheckOptions struct {
	IO      IOStreams
	fac     *Factory        // opens the backend
	ctx     context.Context // the command's; runCheck also stops on SIGINT
	specs   []string
	backend string
	dtypes  []string
	sample  int
	asJSON  bool
	noMSL   bool // --no-msl-check
	emulate bool
}

// checkHelp is check's usage line, summary and help.
var checkHelp = cmdHelp{
	use:   "check --spec FILE [--backend auto|cuda|metal|opencl|none] [--sample N] [--no-msl-check]",
	short: "Validate a kernel spec, enumerate its space, generate its sources and verify a sample on the GPU",
	long: `check loads each spec file (every error names the file, the JSON field and the
expression), enumerates the parameter space per shape class, generates the
kernel source of every valid candidate for each API the spec supports,
checks every Metal source, with Apple's Metal compiler where xcrun finds
it (xcrun -sdk macosx metal), else with clang ($KERNTUNE_CLANG, clang-14
or clang) against kerntune's stand-in <metal_stdlib> and a check of what
Metal rejects that clang cannot see, and, on a GPU
backend, builds every --sample-th valid candidate and verifies it on the
spec's verification shapes against its reference.

Without either compiler check refuses to go on (exit 2) unless given
--no-msl-check, which skips the Metal source check.

A spec with an mlx source (MLX's fast.metal_kernel) runs on the metal
backend only; the other backends reject it. With --emulate, check also runs a
covering sample of its candidates through the CPU emulation of Metal against
the reference (as kerntune verify --spec FILE --emulate), no GPU needed.

Spec kernels are GPU code (a body in the GPU dialect, or .cu/.metal/.cl
files), so the cpu backend cannot run them; with --backend auto and no GPU,
check does the static checks only and says so.`,
	example: `  kerntune check --spec examples/m1_gemv.json
  kerntune check --spec examples/mlx_qr_col_dot.json --backend none
  kerntune check --spec examples/gemm_av.json --backend cuda --sample 1`,
}

// NewCmdCheck builds the check command; runF, when not nil, runs instead of runCheck.
func NewCmdCheck(f *Factory, runF func(*CheckOptions) error) *cobra.Command {
	o := &CheckOptions{IO: f.IO, fac: f}
	cmd := newCmd(checkHelp, o, runF, runCheck, func(c *cobra.Command, _ []string) { o.ctx = c.Context() })
	fl := cmd.Flags()
	fl.StringArrayVar(&o.specs, "spec", nil, "kernel spec file (repeatable)")
	fl.StringVar(&o.backend, "backend", "auto", "GPU backend for the device check: auto, none, "+strings.Join(device.Backends(), ", "))
	fl.StringArrayVar(&o.dtypes, "dtype", nil, "element type to verify (repeatable; "+strings.Join(dtypeNames(), ", ")+"; default: the spec's dtypes)")
	fl.IntVar(&o.sample, "sample", 0, "verify every N-th valid candidate (0: about 32 per dtype; 1: all)")
	fl.BoolVar(&o.asJSON, "json", false, "print the checks as JSON on stdout")
	fl.BoolVar(&o.noMSL, "no-msl-check", false, "skip the check of Metal sources (by Apple's compiler or clang)")
	fl.BoolVar(&o.emulate, "emulate", false, "after the static checks, verify a covering sample of each mlx spec's candidates on the CPU emulation of Metal (as verify --emulate)")
	return cmd
}

func runCheck(o *CheckOptions) error {
	if len(o.specs) == 0 {
		return usageErrorf("check: --spec FILE is required")
	}
	if err := countFlag("sample", o.sample, 0, maxSample, "every N-th valid candidate; 0: about 32 per dtype"); err != nil {
		return err
	}
	dts, err := parseDTypes(o.dtypes...)
	if err != nil {
		return err
	}
	if o.backend != "auto" && o.backend != "none" {
		// Before the static checks (minutes of clang for a large space).
		if _, err := device.TraitsOf(o.backend); err != nil {
			return usageError{fmt.Errorf("--backend %s: %w", o.backend, err)}
		}
		if err := gpuBackendOnly(o.backend); err != nil {
			return err
		}
	}
	cs, err := loadSpecs(o.specs)
	if err != nil {
		return err
	}
	if o.backend != "auto" && o.backend != "none" {
		for _, c := range cs {
			if err := tuner.SpecRunsOn(c, o.backend); err != nil {
				return usageError{fmt.Errorf("--backend %s: %w", o.backend, err)}
			}
		}
	}
	out, log := o.IO.Out, o.IO.ErrOut
	text := out // the human-readable lines; with --json, JSON alone goes to stdout
	if o.asJSON {
		text = io.Discard
	}
	res := checkJSON{Specs: []*spec.StaticCheck{}, Reports: []checkReport{}}
	done := func(err error) error {
		if o.asJSON {
			if perr := printJSON(out, res); perr != nil && err == nil {
				return perr
			}
		}
		return err
	}
	var unchecked []string
	for _, c := range cs {
		sc, err := c.StaticCheckWith(o.ctx, spec.StaticOptions{NoMSLCheck: o.noMSL})
		var me *spec.MSLError
		if errors.As(err, &me) {
			return usageError{err}
		}
		if err != nil {
			return err
		}
		printStaticCheck(text, sc)
		res.Specs = append(res.Specs, sc)
		if sc.MSL != nil && sc.MSL.NoCompiler {
			unchecked = append(unchecked, c.File)
		}
	}
	if len(unchecked) > 0 {
		// Loud: a check that did not run must not read as one that passed.
		fmt.Fprintf(log, "\nWARNING: the Metal sources of %s were NOT checked: %s.\n"+
			"WARNING: install a compiler and run check again, or pass --no-msl-check to go on without the check.\n\n", strings.Join(unchecked, ", "), gpu.NoMSLCompiler)
		return done(usageErrorf("check: the Metal sources of %s were not checked (%s); --no-msl-check goes on without the check", strings.Join(unchecked, ", "), gpu.NoMSLCompiler))
	}
	if o.emulate {
		failed := 0
		for _, c := range cs {
			if c.Body == nil || c.Body.MLX == nil {
				fmt.Fprintf(text, "%s: emulation skipped: it runs mlx kernels (source.mlx) only\n", c.File)
				continue
			}
			for _, dt := range dts {
				if !supports(c, dt) {
					return usageErrorf("--dtype %s: %s supports %s", dt, c.File, strings.Join(c.Spec.DTypes, ", "))
				}
			}
			rep, err := c.Emulate(o.ctx, spec.EmulateOptions{DTypes: dts})
			if errors.Is(err, spec.ErrNoClang) {
				return done(usageError{err})
			}
			if err != nil {
				return done(err)
			}
			printEmulate(text, rep)
			res.Emulation = append(res.Emulation, rep)
			failed += rep.Failed()
		}
		if failed > 0 {
			return done(fmt.Errorf("check: %s failed the emulated verification", plural(failed, "candidate", "candidates")))
		}
	}
	if o.backend == "none" {
		res.DeviceCheck = "not run (--backend none)"
		return done(nil)
	}
	b, err := o.fac.OpenBackend(backendRequest{Name: o.backend, Space: device.SpaceGPU, NoneOK: true, Log: log})
	if err != nil {
		return err
	}
	if b == nil {
		res.DeviceCheck = "skipped: " + noGPUNote(cs)
		fmt.Fprintln(text, "device check "+res.DeviceCheck)
		return done(nil)
	}
	defer b.Close()
	info := b.Info()
	res.Device, res.DeviceCheck = info.Key, "run"
	ctx, stop := signal.NotifyContext(o.ctx, os.Interrupt)
	defer stop()
	tu := tuner.New(b, tuner.Config{})
	failed := 0
	for _, c := range cs {
		if err := tuner.SpecRunsOn(c, info.Backend); err != nil {
			fmt.Fprintf(text, "device check of %s skipped: %v\n", c.Kernel.Name, err)
			res.Skipped = append(res.Skipped, checkSkip{Kernel: c.Kernel.Name, File: c.File, Reason: err.Error()})
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
			n := o.sample
			if n == 0 {
				n = max(1, (len(c.Space().Enumerate())+31)/32)
			}
			rep, err := tu.VerifyAll(ctx, c.Kernel, dt, n)
			if err != nil {
				return done(fmt.Errorf("%s on %s: %w", c.File, info.Key, err))
			}
			fmt.Fprintf(text, "%s %s on %s: %d valid on the device, %d checked (every %d), %d passed, %.1fs\n",
				c.Kernel.Name, dt, info.Key, rep.Valid, rep.Checked, n, rep.Passed, rep.Elapsed.Seconds())
			for _, r := range rep.Reasons() {
				fmt.Fprintf(text, "  %4d× %s (e.g. %s)\n", rep.Failed[r], r, rep.Example[r])
			}
			res.Reports = append(res.Reports, checkReport{File: c.File, Every: n,
				verifyJSON: verifyJSON{c.Kernel.Name, string(dt), rep.Valid, rep.Checked, rep.Passed, rep.Failed, rep.Example, rep.Elapsed.Seconds()}})
			if rep.Checked == 0 || rep.Passed < rep.Checked {
				failed++
			}
		}
	}
	if failed > 0 {
		return done(fmt.Errorf("check: %s had candidates that failed or none checked", plural(failed, "kernel/dtype pair", "kernel/dtype pairs")))
	}
	return done(nil)
}

func supports(c *spec.Compiled, dt kernels.DType) bool {
	for _, d := range c.Spec.DTypes {
		if d == string(dt) {
			return true
		}
	}
	return false
}

// gpuBackendOnly refuses a backend (known by name) that cannot run spec
// kernels.
func gpuBackendOnly(name string) error {
	if t, err := device.TraitsOf(name); err == nil && t.Space != device.SpaceGPU {
		return usageErrorf("--backend %s: spec kernels are GPU code (a body in the GPU dialect, or .cu/.metal/.cl files) and the %s backend cannot run them; use cuda, metal, opencl, or none", name, name)
	}
	return nil
}

// noGPUNote says why check ran no device check with --backend auto, and
// which backend would run each spec: opencl (never picked by auto) only
// for specs with OpenCL sources; an mlx kernel runs on metal alone.
func noGPUNote(cs []*spec.Compiled) string {
	var cl, mlx []string
	for _, c := range cs {
		switch {
		case slices.Contains(c.APIs, gpu.OpenCL):
			cl = append(cl, c.Kernel.Name)
		case c.Body.MLX != nil:
			mlx = append(mlx, c.Kernel.Name)
		}
	}
	note := "no GPU backend could be opened (spec kernels are GPU code; the cpu backend cannot run them"
	switch {
	case len(cl) == len(cs):
		note += "; --backend opencl runs them where an OpenCL device is, PoCL on a CPU included"
	case len(cl) > 0:
		note += "; --backend opencl runs " + strings.Join(cl, ", ") + " where an OpenCL device is, PoCL on a CPU included"
	}
	switch {
	case len(mlx) == len(cs) && len(cs) == 1:
		note += "; this mlx kernel (MLX's fast.metal_kernel) runs on the metal backend only, on a Mac"
	case len(mlx) == len(cs):
		note += "; these mlx kernels (MLX's fast.metal_kernel) run on the metal backend only, on a Mac"
	case len(mlx) == 1:
		note += "; the mlx kernel " + mlx[0] + " runs on the metal backend only, on a Mac"
	case len(mlx) > 0:
		note += "; the mlx kernels " + strings.Join(mlx, ", ") + " run on the metal backend only, on a Mac"
	}
	return note + ")"
}

// checkJSON is what check --json prints: the static checks of every spec,
// then the device checks (one report per kernel and dtype, and the kernels
// whose check was skipped, with why).
type checkJSON struct {
	Specs []*spec.StaticCheck `json:"specs"`
	// Device is the key of the device checked on ("" when none was).
	Device string `json:"device,omitempty"`
	// DeviceCheck: "run", "not run (--backend none)" or "skipped: why".
	DeviceCheck string `json:"device_check"`
	// Emulation holds the emulated verifications (--emulate) of the mlx specs.
	Emulation []*spec.EmulateReport `json:"emulation,omitempty"`
	Reports   []checkReport         `json:"reports"`
	Skipped   []checkSkip           `json:"skipped,omitempty"`
}

// checkReport is the device check of one spec kernel and dtype: verify's
// report, the spec file and the sampling step (every N-th candidate).
type checkReport struct {
	verifyJSON
	File  string `json:"file"`
	Every int    `json:"every"`
}

// checkSkip is a spec kernel the device cannot run (an mlx kernel off
// Metal, a spec without sources for this API).
type checkSkip struct {
	Kernel string `json:"kernel"`
	File   string `json:"file"`
	Reason string `json:"reason"`
}

// printStaticCheck writes the static check as check prints it.
func printStaticCheck(w io.Writer, sc *spec.StaticCheck) {
	fmt.Fprintf(w, "%s: kernel %s, dims %s, %s; APIs %s\n", sc.File, sc.Kernel, strings.Join(sc.Dims, "×"), sc.Correctness, strings.Join(sc.APIs, ", "))
	for _, p := range sc.Params {
		fmt.Fprintf(w, "  param %-8s %s (default %d)\n", p.Name, families.Param{Values: p.Values}.ValuesString(), p.Default)
	}
	fmt.Fprintf(w, "  space: %s, %d valid for every shape\n", plural(sc.SpaceSize, "point", "points"), sc.Valid)
	for _, cl := range sc.Classes {
		fmt.Fprintf(w, "  class %-14s %3d valid on %s\n", cl.Name, cl.Valid, strings.Join(cl.Shapes, ", "))
	}
	fmt.Fprintf(w, "  verification shapes: %d\n", sc.VerificationShapes)
	if sc.Unverifiable > 0 {
		fmt.Fprintf(w, "  warning: %d of %d valid candidates are accepted by no verification shape (e.g. %s): verify refuses them as unverified; add an \"odd\" shape their constraints accept\n",
			sc.Unverifiable, sc.Valid, sc.UnverifiableExample)
	}
	every := "every candidate × dtype"
	if sc.SourceShapes > 0 {
		// The body's source follows the shape (template values, format
		// placeholders, small inputs): distinct sources over the shapes.
		fmt.Fprintf(w, "  sources generated: %d distinct (%s × %s × %s on %s)\n", sc.Sources, plural(sc.Valid, "candidate", "candidates"), plural(sc.DTypes, "dtype", "dtypes"), plural(len(sc.APIs), "API", "APIs"), plural(sc.SourceShapes, "shape", "shapes"))
		every += " × shape"
	} else {
		fmt.Fprintf(w, "  sources generated: %d (%s × %s × %s)\n", sc.Sources, plural(sc.Valid, "candidate", "candidates"), plural(sc.DTypes, "dtype", "dtypes"), plural(len(sc.APIs), "API", "APIs"))
	}
	switch {
	case sc.MSL == nil:
	case sc.MSL.NoCompiler:
		fmt.Fprintf(w, "  MSL check: NOT RUN: %s\n", sc.MSL.Skipped)
	case sc.MSL.Skipped != "":
		fmt.Fprintf(w, "  MSL check: skipped (%s)\n", sc.MSL.Skipped)
	case sc.MSL.Compiler != "":
		fmt.Fprintf(w, "  MSL check by %s: %s passed (%s; Metal %s, %s)\n", sc.MSL.Compiler, plural(sc.MSL.Passed, "Metal source", "Metal sources"), every, sc.MSL.MetalVersion, plural(sc.MSL.Runs, "run", "runs"))
	default:
		fmt.Fprintf(w, "  MSL syntax and address-space checks: %s passed (%s; %s, Metal %s, %s)\n", plural(sc.MSL.Passed, "Metal source", "Metal sources"), every, sc.MSL.Clang, sc.MSL.MetalVersion, plural(sc.MSL.Runs, "run", "runs"))
	}
}
