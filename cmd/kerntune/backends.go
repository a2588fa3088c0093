package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kerntune/kerntune/tuner/device"
	"github.com/kerntune/kerntune/tuner/worker"

	// The backends register themselves, their traits and their flags when
	// imported: a new backend is one more line here.
	_ "github.com/kerntune/kerntune/tuner/cpu"
	_ "github.com/kerntune/kerntune/tuner/cuda"
	_ "github.com/kerntune/kerntune/tuner/metal"
	_ "github.com/kerntune/kerntune/tuner/opencl"
)

// backendOptions are the backends' own flags (device.Traits.Flags) as a
// command line gave them: tune, verify, bench and the worker process take
// every registered backend's flags and refuse one that the backend they
// opened does not take.
type backendOptions struct {
	given map[string]string // flag name → its text as given ("true" for a boolean flag)
}

// backendOptionsOf is the options of flags given as name → text, as a
// command line would give them.
func backendOptionsOf(given map[string]string) backendOptions {
	return backendOptions{given: given}
}

// backendFlag is a flag of the registered backends, with the backends
// that declare it.
type backendFlag struct {
	device.Flag
	owners []string
}

// backendFlags lists the registered backends' flags in a fixed order (by
// backend, then as each declares them); a flag that several backends
// declare is listed once, with all of them.
func backendFlags() []backendFlag {
	var out []backendFlag
	for _, name := range device.Backends() {
		t, _ := device.TraitsOf(name)
		for _, f := range t.Flags {
			i := slices.IndexFunc(out, func(b backendFlag) bool { return b.Name == f.Name })
			if i < 0 {
				out = append(out, backendFlag{Flag: f, owners: []string{name}})
			} else {
				out[i].owners = append(out[i].owners, name)
			}
		}
	}
	return out
}

// flagValue binds one backend flag to backendOptions.given.
type flagValue struct {
	o      *backendOptions
	name   string
	isBool bool
}

func (v flagValue) String() string { return v.o.given[v.name] }
func (v flagValue) Type() string {
	if v.isBool {
		return "bool"
	}
	return "string"
}
func (v flagValue) Set(s string) error {
	if v.isBool {
		if _, err := strconv.ParseBool(s); err != nil {
			return fmt.Errorf("want true or false")
		}
	}
	if v.o.given == nil {
		v.o.given = map[string]string{}
	}
	v.o.given[v.name] = s
	return nil
}

func addBackendFlags(cmd *cobra.Command, o *backendOptions) {
	addNoCacheFlag(cmd)
	for _, f := range backendFlags() {
		isBool := f.Set != ""
		fl := cmd.Flags().VarPF(flagValue{o: o, name: f.Name, isBool: isBool}, f.Name, "", f.Usage)
		if isBool {
			fl.NoOptDefVal = "true"
		}
	}
}

// set lists the flags given that set an option, each with the option's
// value: a boolean flag given true, a flag with a value not empty.
func (o backendOptions) set() ([]backendFlag, []string) {
	var flags []backendFlag
	var values []string
	for _, f := range backendFlags() {
		text, ok := o.given[f.Name]
		if !ok || text == "" {
			continue
		}
		v := text
		if f.Set != "" {
			if on, _ := strconv.ParseBool(text); !on {
				continue
			}
			v = f.Set
		}
		flags, values = append(flags, f), append(values, v)
	}
	return flags, values
}

// options are the flags as the backends' options, checked: a value among
// the flag's Values, and flags of one option agreeing. Each backend takes
// those its traits name (device.OpenWith).
func (o backendOptions) options() (device.Options, error) {
	flags, values := o.set()
	opts := device.Options{}
	by := map[string]int{} // option → index in flags of the flag that set it
	for i, f := range flags {
		v := values[i]
		if f.Values != nil && !slices.Contains(f.Values, v) {
			return nil, usageErrorf("--%s %s: want %s", f.Name, v, orList(f.Values))
		}
		if j, ok := by[f.Option]; ok && values[j] != v {
			return nil, disagree(flags[j], values[j], f, v)
		}
		opts[f.Option], by[f.Option] = v, i
	}
	return opts, nil
}

// disagree is the error for two flags that set one option to different
// values; a boolean flag is described as the value flag it stands for.
func disagree(a backendFlag, av string, b backendFlag, bv string) error {
	if a.Set != "" && b.Set == "" {
		a, av, b, bv = b, bv, a, av
	}
	if b.Set != "" && a.Set == "" {
		return usageErrorf("--%s is --%s %s, but --%s is %s", b.Name, a.Name, bv, a.Name, av)
	}
	return usageErrorf("--%s and --%s disagree (%s, %s)", a.Name, b.Name, av, bv)
}

// orList joins "a, b or c".
func orList(vs []string) string {
	if len(vs) < 2 {
		return strings.Join(vs, "")
	}
	return strings.Join(vs[:len(vs)-1], ", ") + " or " + vs[len(vs)-1]
}

// args are the flags that give a worker process the same options.
func (o backendOptions) args() []string {
	var a []string
	flags, values := o.set()
	for i, f := range flags {
		if f.Set != "" {
			a = append(a, "--"+f.Name)
		} else {
			a = append(a, "--"+f.Name, values[i])
		}
	}
	return a
}

// checkTaken refuses flags that the opened backend does not take.
func (o backendOptions) checkTaken(b device.Backend) error {
	name := b.Info().Backend
	t, _ := device.TraitsOf(name) // an unregistered name takes no options
	flags, _ := o.set()
	for _, f := range flags {
		if t.Takes(f.Option) {
			continue
		}
		msg := fmt.Sprintf("--%s applies to the %s backend only; this run uses %s", f.Name, strings.Join(f.owners, " and "), name)
		if f.Elsewhere != "" {
			msg += " (" + f.Elsewhere + ")"
		}
		return usageErrorf("%s", msg)
	}
	return nil
}

// opened, when set, is told of each backend this process opens: tests
// count the opens of a parent and its workers with it.
var opened func(name string)

// backendRequest is what a command asks of the backend it runs on.
type backendRequest struct {
	// Name is --backend: a registered name, or "auto" for the first of
	// device.AutoOrder(Space) that opens.
	Name string
	// Space limits "auto" to the backends of one kind: device.SpaceGPU for
	// spec kernels, which also refuses a named CPU backend; "" for all.
	Space string
	// Opts are the backends' own flags.
	Opts backendOptions
	// Isolate, when not nil, opens a backend whose traits say so (or as
	// --isolate says) in a worker process (tune).
	Isolate *isolation
	// NoneOK: "auto" finding no backend is not an error; OpenBackend then
	// returns nil (check runs no device check).
	NoneOK bool
	// Bare returns a named backend's error as it is, without the
	// "--backend NAME:" of a usage error (devices lists them).
	Bare bool
	// Log gets why "auto" passed over a backend: always when it is present
	// but failed to open, and when Verbose also when the machine lacks it.
	Log     io.Writer
	Verbose bool

	opts device.Options // Opts as the backends' options, set by OpenBackend
}

// isolation is how tune runs candidates in a worker process.
type isolation struct {
	set, on bool          // --isolate given, and its value
	specs   []string      // --spec files the worker loads too
	timeout time.Duration // --candidate-timeout
}

// OpenBackend is the one place a command opens a backend: the named one or
// "auto"'s pick, in a worker process where isolation applies (only the
// worker then opens the device, so a GPU's warm-up and facts are measured
// once, in the process that times), refusing flags the backend it opened
// does not take.
func (f *Factory) OpenBackend(r backendRequest) (device.Backend, error) {
	var err error
	if r.opts, err = r.Opts.options(); err != nil {
		return nil, err
	}
	if r.Log == nil {
		r.Log = io.Discard
	}
	var b device.Backend
	if r.Name != "auto" {
		if r.Space == device.SpaceGPU {
			if err := gpuBackendOnly(r.Name); err != nil {
				return nil, err
			}
		}
		if b, err = r.open(r.Name); err != nil {
			if r.Bare {
				return nil, err
			}
			return nil, usageError{fmt.Errorf("--backend %s: %w", r.Name, err)}
		}
	} else if b = device.OpenAuto(r.Space, r.open, r.notUsed); b == nil {
		if r.NoneOK {
			return nil, nil
		}
		return nil, usageErrorf("no backend could be opened")
	}
	if err := r.Opts.checkTaken(b); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// open opens one named backend: in a worker process when isolation is on
// for it, else in this process with the options that apply to it.
func (r backendRequest) open(name string) (device.Backend, error) {
	if r.Isolate != nil {
		traits, err := device.TraitsOf(name)
		if err != nil {
			return nil, err
		}
		on := traits.Isolate
		if r.Isolate.set {
			on = r.Isolate.on
		}
		if on {
			return r.openWorker(name)
		}
	}
	b, err := device.OpenWith(name, r.opts)
	if err == nil && opened != nil {
		opened(name)
	}
	return b, err
}

// openWorker starts a worker process that opens the named backend.
func (r backendRequest) openWorker(name string) (device.Backend, error) {
	cmdline, err := worker.Command(name)
	if err != nil {
		return nil, err
	}
	// Spec kernels live in registries: the worker loads the same specs.
	for _, s := range r.Isolate.specs {
		cmdline = append(cmdline, "--spec", s)
	}
	cmdline = append(cmdline, r.Opts.args()...)
	wb, err := worker.Open(worker.Options{Command: cmdline, Timeout: r.Isolate.timeout, Log: r.Log})
	if err != nil {
		return nil, fmt.Errorf("--isolate: %w", err)
	}
	return wb, nil
}

// notUsed logs a backend that "--backend auto" passed over: always when
// it is present but failed to open, and when verbose also when this
// machine lacks it.
func (r backendRequest) notUsed(name string, err error) {
	if r.Verbose || !errors.Is(err, device.ErrUnavailable) {
		fmt.Fprintf(r.Log, "backend %s not used: %v\n", name, err)
	}
}
