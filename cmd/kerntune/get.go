package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/params"
	"github.com/kerntune/kerntune/params/families"
	"github.com/kerntune/kerntune/params/paramfile"
	"github.com/kerntune/kerntune/spec"
)

func init() {
	commands = append(commands, func(f *Factory) *cobra.Command { return NewCmdGet(f, nil) })
}

// getOutput is what `kerntune get --json` prints.
type getOutput struct {
	Device  string                  `json:"device"`
	Backend string                  `json:"backend"`
	Kernel  string                  `json:"kernel"`
	DType   string                  `json:"dtype"`
	Shape   []int                   `json:"shape"`
	Class   string                  `json:"class"`
	File    string                  `json:"file"`
	Found   bool                    `json:"file_found"`
	Params  map[string]params.Value `json:"params"`
	// Matched is how the device was found, How what named it.
	Matched     string `json:"matched"`
	How         string `json:"how,omitempty"`
	UseBaseline bool   `json:"use_baseline"`
	Baseline    string `json:"baseline,omitempty"`
	UseSource   string `json:"use_source"`
	// Warnings are the loader's warnings, then one per variable of
	// UnusedEnv.
	Warnings []string `json:"warnings"`
	// UnusedEnv are the KERNTUNE_ variables that have no effect on this
	// output, and why.
	UnusedEnv []params.UnusedVar `json:"unused_env"`
}

// GetOptions are what get is asked to do: its flags and its streams.
type GetOptions struct {
	IO                                                                        IOStreams
	kernel, shapeText, dtype, file, device, backend, deviceFamily, deviceName string
	computeUnits                                                              int
	asJSON                                                                    bool
	specs                                                                     []string
}

// NewCmdGet builds the get command; runF, when not nil, runs instead of runGet.
func NewCmdGet(f *Factory, runF func(*GetOptions) error) *cobra.Command {
	o := &GetOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "get --kernel FAMILY --shape DIMS [--dtype f32] [--params FILE] [--device KEY | --device-name NAME [--compute-units N]] [--json]",
		Short: "Print the parameters an application would launch a kernel with, and where each comes from",
		Long: `get resolves the parameters of one kernel launch exactly as applications do
through the params package: per parameter, the first of
  1. the variable KERNTUNE_<FAMILY>_<PARAM> (e.g. KERNTUNE_GEMV_NT_BN=8)
  2. the device's exact-shape entry (<dtype>/<dims>) in the params file
  3. the device's shape-class entry (<dtype>/<class>)
  4. the same entries of a fallback device of the same device family
  5. the built-in default
and prints each value with its source, how the device was found (matched:
key, name, only device in file, family <family>, none) and whether the
application should call the baseline instead (use: baseline, from the entry's
"use" field or $KERNTUNE_<FAMILY>_USE). The params file is --params, else
$KERNTUNE_PARAMS, else ./hardware_params.json; a missing file is not an error
(defaults apply). The device is the key --device (else $KERNTUNE_DEVICE) if
the file holds it, else the device named --device-name (else
$KERNTUNE_DEVICE_NAME; "Apple M3 Max", "NVIDIA H100 80GB HBM3"; ASCII case
and spacing ignored) with the nearest --compute-units, else the file's only
device unless it is another machine's (another backend than --backend or
this machine's, another CPU model: then a warning names both devices and it
is only a fallback), else this machine's CPU; when none matches, the devices of
--device-family are fallbacks and a warning lists the file's devices.
Every KERNTUNE_ variable that has no effect on the output is a warning
saying why (a misspelt name, a parameter the device's backend does not have
such as KERNTUNE_GEMV_NT_TG on a CPU, a variable of another kernel than
--kernel, KERNTUNE_PARAMS beside --params); --json lists them in
"unused_env" and every warning in "warnings".

A --spec kernel is GPU code: for a device not in the file and no --backend,
its backend is the spec's (metal on macOS, else the first of cuda, metal,
opencl the spec supports; they share one parameter space); a CPU device is
an error naming --backend and the spec's backends.`,
		Example: `  kerntune get --kernel gemv_nt --shape 1x896x4864
  kerntune get --kernel gemm_av --dtype f16 --shape 512x4864x896 --device-name "NVIDIA H100 80GB HBM3"
  KERNTUNE_GEMV_NT_BN=8 kerntune get --kernel gemv_nt --shape 1x896x896 --json`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error { return runOr(o, runF, runGet) },
	}
	fl := cmd.Flags()
	fl.StringVar(&o.kernel, "kernel", "", "kernel family: "+strings.Join(families.BuiltinNames(), ", "))
	fl.StringVar(&o.shapeText, "shape", "", "shape, dims joined by x (e.g. 1x896x4864 for m x n x k, 64x896 for rows x cols)")
	fl.StringVar(&o.dtype, "dtype", "f32", "element type: "+strings.Join(families.DTypes(), ", "))
	fl.StringVar(&o.file, "params", "", "params file (default $KERNTUNE_PARAMS, else ./"+paramfile.DefaultFileName+")")
	fl.StringVar(&o.device, "device", "", "device key (default $KERNTUNE_DEVICE)")
	fl.StringVar(&o.deviceName, "device-name", "", `device name as the system reports it, e.g. "Apple M3 Max" (default $KERNTUNE_DEVICE_NAME)`)
	fl.IntVar(&o.computeUnits, "compute-units", 0, "with --device-name: GPU cores, SMs or CPU cores, to pick among devices of that name")
	fl.StringVar(&o.backend, "backend", "", "backend of a device not in the file (cpu, cuda, metal, opencl; default cpu, for a --spec kernel the spec's: metal on macOS, else the first of cuda, metal, opencl it supports)")
	fl.StringVar(&o.deviceFamily, "device-family", "", "device family of a device not in the file, to find fallback devices (e.g. amd64, sm_90)")
	fl.BoolVar(&o.asJSON, "json", false, "print JSON")
	fl.StringArrayVar(&o.specs, "spec", nil, "kernel spec file whose kernel --kernel may name (repeatable)")
	return cmd
}

func runGet(o *GetOptions) error {
	if o.kernel == "" || o.shapeText == "" {
		return usageErrorf("get: --kernel and --shape are required (e.g. --kernel gemv_nt --shape 1x896x4864)")
	}
	shape, err := families.ParseShape(o.shapeText)
	if err != nil {
		return usageErrorf("get: --shape: %w", err)
	}
	cs, err := loadSpecs(o.specs)
	if err != nil {
		return err
	}
	if o.computeUnits > maxCount {
		return usageErrorf("get: --compute-units is %d; must be 0..%d", o.computeUnits, maxCount)
	}
	if o.computeUnits < 0 {
		return usageErrorf("get: --compute-units is %d; it must be 0 (unknown) or positive", o.computeUnits)
	}
	opts := params.Options{Path: o.file, Device: o.device, DeviceName: o.deviceName, ComputeUnits: o.computeUnits,
		Backend: o.backend, DeviceFamily: o.deviceFamily, Families: specFamilies(cs)}
	l, err := params.Open(opts)
	if err != nil {
		return usageErrorf("get: %w", err)
	}
	sc := specKernel(cs, o.kernel)
	if d := l.Device(); sc != nil && o.backend == "" && !d.InFile {
		// A spec kernel is GPU code: for a device not in the file its
		// backend comes from the spec, not from this machine's CPU.
		if _, ok := sc.Kernel.Family.Spaces[d.Kind]; !ok {
			opts.Backend = specBackend(sc)
			if l, err = params.Open(opts); err != nil {
				return usageErrorf("get: %w", err)
			}
		}
	}
	stderr := o.IO.ErrOut
	unused := unusedVars(l, o.kernel, os.Environ(), o.file != "", o.device != "", specFamilies(cs))
	warnings := l.Warnings()
	for _, v := range unused {
		warnings = append(warnings, fmt.Sprintf("%s has no effect: %s", v.Name, v.Why))
	}
	for _, w := range warnings {
		fmt.Fprintln(stderr, "kerntune: warning:", w)
	}
	r, err := l.Resolve(o.kernel, o.dtype, shape)
	if errors.Is(err, params.ErrNoSpace) && sc != nil {
		apis := specAPIs(sc)
		return usageErrorf("get: %w; %s is a spec kernel for %s backends: name a device of one of them (--device, --device-name) or give --backend %s",
			err, o.kernel, strings.Join(apis, ", "), strings.Join(apis, "|"))
	}
	if err != nil {
		return usageErrorf("get: %w", err)
	}
	out := o.IO.Out
	if o.asJSON {
		if warnings == nil {
			warnings = []string{}
		}
		if unused == nil {
			unused = []params.UnusedVar{}
		}
		return printJSON(out, getOutput{
			Device: r.Device, Backend: r.Backend, Kernel: r.Family, DType: r.DType, Shape: r.Shape,
			Class: r.Class, File: l.Path(), Found: l.FileFound(), Params: r.Params,
			Matched: r.Matched, How: l.Device().How, UseBaseline: r.UseBaseline, Baseline: r.Baseline,
			UseSource: r.UseSource, Warnings: warnings, UnusedEnv: unused,
		})
	}
	return printResolved(out, l, r)
}

// specKernel is the spec among cs whose kernel is name, or nil.
func specKernel(cs []*spec.Compiled, name string) *spec.Compiled {
	for _, c := range cs {
		if c.Kernel.Name == name {
			return c
		}
	}
	return nil
}

// specAPIs are the backends a spec kernel's source can be built for.
func specAPIs(c *spec.Compiled) []string {
	out := make([]string, len(c.APIs))
	for i, api := range c.APIs {
		out[i] = string(api)
	}
	return out
}

// specBackend is the backend get resolves a spec kernel for when neither
// --backend nor a device of the file gives one: metal on macOS when the spec
// supports it, else the first the spec supports of cuda, metal, opencl (as
// tune's auto order: metal on macOS, else cuda). GPU backends share one
// parameter space, so the choice changes only the name get prints.
func specBackend(c *spec.Compiled) string {
	if runtime.GOOS == "darwin" && slices.Contains(c.APIs, gpu.Metal) {
		return string(gpu.Metal)
	}
	for _, api := range gpu.APIs {
		if slices.Contains(c.APIs, api) {
			return string(api)
		}
	}
	return "gpu"
}

// unusedVars are the variables of environ that have no effect on get's
// output: those the loader does not read (params.Loader.UnusedEnvVars,
// its reasons in the flags' words where a flag replaced the variable), and
// the variables of the other families, which the loader reads for them but
// get does not resolve.
func unusedVars(l *params.Loader, kernel string, environ []string, fileFlag, deviceFlag bool, specs map[string]*families.Family) []params.UnusedVar {
	prefix := l.EnvPrefix()
	vars := l.UnusedEnvVars(environ)
	listed := map[string]bool{}
	for i, v := range vars {
		listed[v.Name] = true
		switch {
		case v.Name == prefix+"_PARAMS" && fileFlag:
			vars[i].Why = "not read: --params names the params file"
		case v.Name == prefix+"_DEVICE" && deviceFlag:
			vars[i].Why = "not read: --device names the device"
		}
	}
	// What each family's variables set: those of the family get resolves
	// have no effect only when set but blank (both loaders ignore an empty
	// value, as if unset); the other families' are read for them, not for
	// get's output.
	type famVar struct{ fam, what string }
	sets := map[string]famVar{}
	kind, builtins := l.Device().Kind, families.Builtin()
	for _, name := range l.Families() {
		fam := specs[name]
		if fam == nil {
			fam = builtins[name]
		}
		if fam == nil {
			continue
		}
		sets[params.EnvVarName(prefix, name, families.ReservedParamName)] = famVar{name, name + "'s choice of the baseline"}
		if sp, ok := fam.Spaces[kind]; ok {
			for _, p := range sp.Params {
				sets[params.EnvVarName(prefix, name, p.Name)] = famVar{name, name + " " + p.Name}
			}
		}
	}
	for _, kv := range environ {
		name, val, _ := strings.Cut(kv, "=")
		v, ok := sets[name]
		switch {
		case !ok || listed[name]:
		case v.fam != kernel:
			listed[name] = true
			vars = append(vars, params.UnusedVar{Name: name, Why: fmt.Sprintf("it sets %s; get resolves only %s", v.what, kernel)})
		case strings.TrimSpace(val) == "":
			listed[name] = true
			vars = append(vars, params.UnusedVar{Name: name, Why: "it is set but empty, and an empty value is ignored (unset it, or give a value)"})
		}
	}
	sort.Slice(vars, func(i, j int) bool { return vars[i].Name < vars[j].Name })
	return vars
}

func printResolved(w io.Writer, l *params.Loader, r *params.Resolved) error {
	d := l.Device()
	tw := newTable(w)
	dev, how := r.Device, d.How
	switch how {
	case "Options.Device":
		how = "--device"
	case "Options.DeviceName":
		how = "--device-name"
	}
	switch {
	case dev == "":
		dev = "(none)"
	case !d.InFile:
		dev += "  (" + how + "; not in the file)"
	default:
		dev += "  (" + how + ")"
	}
	file := l.Path()
	if !l.FileFound() {
		file += "  (not found; defaults apply)"
	}
	fmt.Fprintf(tw, "file\t%s\n", file)
	fmt.Fprintf(tw, "device\t%s\n", dev)
	fmt.Fprintf(tw, "matched\t%s\n", r.Matched)
	if len(d.Fallbacks) > 0 {
		fmt.Fprintf(tw, "fallbacks\t%s\n", strings.Join(d.Fallbacks, ", "))
	}
	fmt.Fprintf(tw, "backend\t%s\n", r.Backend)
	fmt.Fprintf(tw, "kernel\t%s\n", r.Family)
	fmt.Fprintf(tw, "dtype\t%s\n", r.DType)
	fmt.Fprintf(tw, "shape\t%s\n", families.ShapeString(r.Shape))
	fmt.Fprintf(tw, "class\t%s\n", r.Class)
	use := paramfile.UseTuned
	if r.UseBaseline {
		use = paramfile.UseBaseline
	}
	if r.Baseline != "" {
		use += " (baseline " + r.Baseline + ")"
	}
	fmt.Fprintf(tw, "use\t%s  [%s]\n", use, r.UseSource)
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "PARAM\tVALUE\tSOURCE")
	for _, name := range r.Names() {
		v := r.Params[name]
		fmt.Fprintf(tw, "%s\t%d\t%s\n", name, v.Value, v.Source)
	}
	return tw.Flush()
}
