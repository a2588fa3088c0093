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
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params/families"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/spec"
	"github.com/kerntune/kerntune/tuner"
)

func init() {
	commands = append(commands, func(f *Factory) *cobra.Command { return NewCmdVerify(f, nil) })
}

type verifyJSON struct {
	Kernel  string            `json:"kernel"`
	DType   string            `json:"dtype"`
	Valid   int               `json:"valid"`
	Checked int               `json:"checked"`
	Passed  int               `json:"passed"`
	Failed  map[string]int    `json:"failed,omitempty"`
	Example map[string]string `json:"example,omitempty"`
	Seconds float64           `json:"seconds"`
}

// VerifyOptions are what verify is asked to do: its flags and its streams.
type VerifyOptions struct {
	IO            IOStreams
	ctx           context.Context // the command's; runVerify also stops on SIGINT
	backend       string
	kernelNames   []string
	dtypes        []string
	sample        int
	where         []string
	asJSON, quiet bool
	backendOpts   backendOptions
	fac           *Factory // opens the backend
	// The emulation of mlx specs (--spec with --emulate).
	specs      []string
	emulate    bool
	candidates string
	seed       uint64
	set        func(name string) bool // whether a flag was given
}

// verifyHelp is verify's usage line, summary and help.
var verifyHelp = cmdHelp{
	use:   "verify",
	short: "Build and verify every candidate of every family on small odd shapes",
	long: `verify builds every valid candidate of each family on the device (or every
--sample-th one) and checks it against the float64 reference on shapes that are
not multiples of any tile, with the output poisoned first. Failures are counted
by reason; the command fails if any candidate fails.

With --spec FILE --emulate, verify runs an mlx spec's kernel (MLX's
fast.metal_kernel) off a Mac, without a GPU: a covering sample of its valid
candidates (every pair of parameter values; --candidates N or all) in each
dtype is compiled by clang against kerntune's executable <metal_stdlib> and
run on the CPU as MLX launches it, on every verification shape (and the
small tuned shapes), against the spec's reference. It proves results, not
timings, nor that Apple's Metal compiler accepts the source. It exits 1 when
a candidate fails and 2 when no clang is found.`,
	example: `  kerntune verify --backend metal --kernel softmax
  kerntune verify --spec examples/mlx_exp1d.json --emulate
  kerntune verify --spec examples/mlx_twod.json --emulate --dtype f16 --candidates all`,
}

// NewCmdVerify builds the verify command; runF, when not nil, runs instead of runVerify.
func NewCmdVerify(f *Factory, runF func(*VerifyOptions) error) *cobra.Command {
	o := &VerifyOptions{IO: f.IO, fac: f}
	cmd := newCmd(verifyHelp, o, runF, runVerify, func(c *cobra.Command, _ []string) {
		o.ctx = c.Context()
		o.set = func(name string) bool { return c.Flags().Changed(name) }
	})
	fl := cmd.Flags()
	addBackendFlag(cmd, &o.backend, "")
	fl.StringArrayVar(&o.kernelNames, "kernel", nil, "kernel family (repeatable; default all)")
	fl.StringArrayVar(&o.dtypes, "dtype", []string{"f32", "f16"}, "element types (repeatable): "+strings.Join(dtypeNames(), ", "))
	fl.IntVar(&o.sample, "sample", 1, "verify every N-th candidate only")
	fl.StringArrayVar(&o.where, "where", nil, "verify only candidates with this parameter value, e.g. MMA=1 (repeatable; all must hold)")
	fl.BoolVar(&o.asJSON, "json", false, "print JSON")
	fl.BoolVarP(&o.quiet, "quiet", "q", false, "print only the total")
	addBackendFlags(cmd, &o.backendOpts)
	fl.StringArrayVar(&o.specs, "spec", nil, "mlx kernel spec file to verify by emulation (repeatable; with --emulate)")
	fl.BoolVar(&o.emulate, "emulate", false, "run the --spec kernels through the CPU emulation of Metal instead of on a device (no GPU needed; needs clang)")
	fl.StringVar(&o.candidates, "candidates", "", "with --emulate: candidates per dtype, N or all (default: a covering sample, every pair of parameter values)")
	fl.Uint64Var(&o.seed, "seed", 0, "with --emulate: the inputs' random seed (default: fresh; the report prints it)")
	return cmd
}

func runVerify(o *VerifyOptions) error {
	if o.emulate || len(o.specs) > 0 {
		return runEmulate(o)
	}
	for _, f := range []string{"candidates", "seed"} {
		if o.given(f) {
			return usageErrorf("--%s: only with --spec FILE --emulate", f)
		}
	}
	ks, err := parseKernels(o.kernelNames)
	if err != nil {
		return err
	}
	dts, err := parseDTypes(o.dtypes...)
	if err != nil {
		return err
	}
	if err := countFlag("sample", o.sample, 1, maxSample, "every N-th candidate"); err != nil {
		return err
	}
	filters, err := parseWhere(o.where)
	if err != nil {
		return err
	}
	log := o.IO.ErrOut
	b, err := o.fac.OpenBackend(backendRequest{Name: o.backend, Opts: o.backendOpts, Log: log})
	if err != nil {
		return err
	}
	defer b.Close()
	if err := checkWhere(ks, b.Info().Backend, o.where, false); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(o.ctx, os.Interrupt)
	defer stop()
	tu := tuner.New(b, tuner.Config{})
	var reps []verifyJSON
	failed, total := 0, 0
	for _, k := range ks {
		for _, dt := range dts {
			rep, err := tu.VerifyAll(ctx, k, dt, o.sample, filters...)
			if err != nil {
				return err
			}
			v := verifyJSON{k.Name, string(dt), rep.Valid, rep.Checked, rep.Passed, rep.Failed, rep.Example, rep.Elapsed.Seconds()}
			reps = append(reps, v)
			failed += rep.Checked - rep.Passed
			total += rep.Checked
			if !o.quiet {
				fmt.Fprintf(log, "%-10s %s  %d/%s passed (%d valid) in %.1fs\n", k.Name, dt, rep.Passed, plural(rep.Checked, "candidate", "candidates"), rep.Valid, rep.Elapsed.Seconds())
				for _, r := range rep.Reasons() {
					fmt.Fprintf(log, "    %5d × %s  (e.g. %s)\n", rep.Failed[r], r, rep.Example[r])
				}
			}
		}
	}
	if o.asJSON {
		if err := printJSON(o.IO.Out, map[string]any{"device": b.Info().Key, "reports": reps}); err != nil {
			return err
		}
	}
	if total == 0 && len(o.where) > 0 {
		return usageErrorf("--where %s: no candidate of the selected families has these parameter values", strings.Join(o.where, " "))
	}
	fmt.Fprintf(log, "verified %s on %s: %d passed, %d failed\n", plural(total, "candidate", "candidates"), b.Info().Key, total-failed, failed)
	if failed > 0 {
		return fmt.Errorf("%d of %s failed verification", failed, plural(total, "candidate", "candidates"))
	}
	return nil
}

// whereConstraints turns tune's --where NAME=VALUE flags into constraints
// of the search space.
func whereConstraints(ws []string) ([]search.Constraint, error) {
	fs, err := parseWhere(ws)
	if err != nil {
		return nil, err
	}
	cs := make([]search.Constraint, len(fs))
	for i, f := range fs {
		w := ws[i]
		cs[i] = search.Constraint{Name: "--where " + w, Check: func(c search.Candidate) error {
			if !f(c) {
				return fmt.Errorf("not %s (--where)", w)
			}
			return nil
		}}
	}
	return cs, nil
}

// checkWhere refuses, before any work, a --where NAME=VALUE (already
// parsed by parseWhere) that no candidate can meet on backend: a parameter
// a family does not have there, or a value not among its allowed values.
// With every, each family of ks must allow it (tune searches every family
// under all filters); otherwise one family suffices (verify reports the
// others as having no candidate). Families without a space on backend are
// left to the tuner, which says so.
func checkWhere(ks []*kernels.Kernel, backend string, ws []string, every bool) error {
	for _, w := range ws {
		name, val, _ := strings.Cut(w, "=")
		v, _ := strconv.Atoi(val)
		var why []string
		fits := false
		for _, k := range ks {
			sp, ok := k.Space(backend)
			if !ok {
				continue
			}
			i := slices.IndexFunc(sp.Params, func(p families.Param) bool { return p.Name == name })
			var reason string
			switch {
			case i < 0:
				names := make([]string, len(sp.Params))
				for j, p := range sp.Params {
					names[j] = p.Name
				}
				reason = fmt.Sprintf("%s has no parameter %s on the %s backend (it has %s)", k.Name, name, backend, strings.Join(names, ", "))
			case !sp.Params[i].Allowed(v):
				reason = fmt.Sprintf("%s allows %s = %s on the %s backend", k.Name, name, sp.Params[i].ValuesString(), backend)
			default:
				fits = true
				continue
			}
			if every {
				return usageErrorf("--where %s: %s", w, reason)
			}
			why = append(why, reason)
		}
		if !fits && len(why) > 0 {
			return usageErrorf("--where %s: %s", w, strings.Join(why, "; "))
		}
	}
	return nil
}

// parseWhere turns --where NAME=VALUE flags into candidate filters.
func parseWhere(ws []string) ([]func(search.Candidate) bool, error) {
	var fs []func(search.Candidate) bool
	for _, w := range ws {
		name, val, ok := strings.Cut(w, "=")
		v, err := strconv.Atoi(val)
		if !ok || name == "" || err != nil {
			return nil, usageErrorf("--where %q: want NAME=INTEGER, e.g. MMA=1", w)
		}
		fs = append(fs, func(c search.Candidate) bool {
			got, has := c[name]
			return has && got == v
		})
	}
	return fs, nil
}

// given reports whether flag name was on the command line.
func (o *VerifyOptions) given(name string) bool { return o.set != nil && o.set(name) }

// emulateJSON is what verify --emulate --json prints.
type emulateJSON struct {
	Reports []*spec.EmulateReport `json:"reports"`
	Passed  int                   `json:"passed"`
	Failed  int                   `json:"failed"`
}

// maxFailuresShown is how many failing runs verify --emulate quotes.
const maxFailuresShown = 5

// runEmulate is verify --spec FILE --emulate: each mlx spec's candidates
// through the CPU emulation of Metal, no backend opened. A failing
// candidate exits 1; bad flags, a spec that is not mlx, and no clang exit 2.
func runEmulate(o *VerifyOptions) error {
	switch {
	case !o.emulate:
		return usageErrorf("--spec: verify runs a spec's kernel only by emulation; add --emulate (on a GPU, kerntune check --spec FILE verifies on the device)")
	case len(o.specs) == 0:
		return usageErrorf("--emulate: give the mlx spec to run with --spec FILE")
	}
	for _, f := range []string{"backend", "kernel", "sample"} {
		if o.given(f) {
			return usageErrorf("--%s: not with --emulate, which runs the --spec kernels on the CPU (use --candidates N to sample)", f)
		}
	}
	opts := spec.EmulateOptions{Seed: o.seed}
	switch c := o.candidates; c {
	case "":
	case "all":
		opts.Candidates = spec.EmulateAll
	default:
		n, err := strconv.Atoi(c)
		if err != nil || n < 1 || n > maxSample {
			return usageErrorf("--candidates %q: want a number of candidates per dtype, 1..%d, or all", c, maxSample)
		}
		opts.Candidates = n
	}
	var dts []kernels.DType
	if o.given("dtype") {
		var err error
		if dts, err = parseDTypes(o.dtypes...); err != nil {
			return err
		}
	}
	filters, err := parseWhere(o.where)
	if err != nil {
		return err
	}
	opts.Where = filters
	var cs []*spec.Compiled
	for _, p := range o.specs {
		c, err := spec.Load(p)
		if err != nil {
			return usageErrorf("--spec: %w", err)
		}
		if c.Body == nil || c.Body.MLX == nil {
			return usageErrorf("--spec %s: --emulate runs mlx kernels (source.mlx, MLX's fast.metal_kernel) only", p)
		}
		for _, dt := range dts {
			if !supports(c, dt) {
				return usageErrorf("--dtype %s: %s supports %s", dt, c.File, strings.Join(c.Spec.DTypes, ", "))
			}
		}
		if err := checkSpecWhere(c, o.where); err != nil {
			return err
		}
		cs = append(cs, c)
	}
	ctx, stop := signal.NotifyContext(o.ctx, os.Interrupt)
	defer stop()
	out, log := o.IO.Out, o.IO.ErrOut
	text := out
	if o.asJSON {
		text = io.Discard
	}
	res := emulateJSON{Reports: []*spec.EmulateReport{}}
	for _, c := range cs {
		opts.DTypes = dts
		rep, err := c.Emulate(ctx, opts)
		if errors.Is(err, spec.ErrNoClang) {
			return usageError{err}
		}
		if err != nil {
			return err
		}
		res.Reports = append(res.Reports, rep)
		if !o.quiet {
			printEmulate(text, rep)
		}
		for _, d := range rep.DTypes {
			res.Passed += d.Passed
			res.Failed += d.Failed
		}
	}
	if o.asJSON {
		if err := printJSON(out, res); err != nil {
			return err
		}
	}
	total := res.Passed + res.Failed
	if total == 0 {
		if len(o.where) > 0 {
			return usageErrorf("--where %s: no candidate of the specs' kernels has these parameter values", strings.Join(o.where, " "))
		}
		return fmt.Errorf("no candidate ran: no verification shape of the spec accepts any valid candidate")
	}
	fmt.Fprintf(log, "emulated %s: %d passed, %d failed\n", plural(total, "candidate", "candidates"), res.Passed, res.Failed)
	if res.Failed > 0 {
		return fmt.Errorf("%d of %s failed the emulated verification", res.Failed, plural(total, "candidate", "candidates"))
	}
	return nil
}

// checkSpecWhere refuses a --where NAME=VALUE that no candidate of spec c
// can meet: a parameter it lacks, or a value not among its values.
func checkSpecWhere(c *spec.Compiled, ws []string) error {
	ps, _ := c.Kernel.Space("gpu")
	for _, w := range ws {
		name, val, _ := strings.Cut(w, "=")
		v, _ := strconv.Atoi(val)
		i := slices.IndexFunc(ps.Params, func(p families.Param) bool { return p.Name == name })
		if i < 0 {
			names := make([]string, len(ps.Params))
			for j, p := range ps.Params {
				names[j] = p.Name
			}
			return usageErrorf("--where %s: %s has no parameter %s (it has %s)", w, c.Kernel.Name, name, strings.Join(names, ", "))
		}
		if !ps.Params[i].Allowed(v) {
			return usageErrorf("--where %s: %s allows %s = %s", w, c.Kernel.Name, name, ps.Params[i].ValuesString())
		}
	}
	return nil
}

// printEmulate writes one spec's emulated verification: a row per dtype
// and the first failures with their candidate and shape.
func printEmulate(w io.Writer, rep *spec.EmulateReport) {
	fmt.Fprintf(w, "%s: kernel %s emulated on the CPU (%s, seed %d), %.1fs\n", rep.File, rep.Kernel, filepath.Base(rep.Clang), rep.Seed, rep.Elapsed.Seconds())
	tw := newTable(w)
	fmt.Fprintln(tw, "  dtype\tcandidates\tshapes\tpassed\tfailed")
	for _, d := range rep.DTypes {
		fmt.Fprintf(tw, "  %s\t%d of %d valid\t%d\t%d\t%d\n", d.DType, d.Candidates, d.Valid, d.Shapes, d.Passed, d.Failed)
	}
	tw.Flush()
	for _, d := range rep.DTypes {
		if d.Unverifiable > 0 {
			fmt.Fprintf(w, "  warning: %s: %d of %d valid candidates are accepted by no verification shape and were not run; add an \"odd\" shape their constraints accept\n", d.DType, d.Unverifiable, d.Valid)
		}
	}
	fails := rep.Failures()
	for i, f := range fails {
		if i == maxFailuresShown {
			fmt.Fprintf(w, "  ... and %d more failing runs\n", len(fails)-i)
			break
		}
		fmt.Fprintf(w, "  FAIL %s %s on %s: %s\n", f.DType, f.Candidate.Key(), f.Shape, firstLineOf(f.Error))
	}
}

// firstLineOf is s up to its first newline.
func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
