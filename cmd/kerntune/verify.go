package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params"
	"github.com/kerntune/kerntune/search"
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
}

// verifyHelp is verify's usage line, summary and help.
var verifyHelp = cmdHelp{
	use:   "verify",
	short: "Build and verify every candidate of every family on small odd shapes",
	long: `verify builds every valid candidate of each family on the device (or every
--sample-th one) and checks it against the float64 reference on shapes that are
not multiples of any tile, with the output poisoned first. Failures are counted
by reason; the command fails if any candidate fails.`,
}

// NewCmdVerify builds the verify command; runF, when not nil, runs instead of runVerify.
func NewCmdVerify(f *Factory, runF func(*VerifyOptions) error) *cobra.Command {
	o := &VerifyOptions{IO: f.IO}
	cmd := newCmd(verifyHelp, o, runF, runVerify, func(c *cobra.Command, _ []string) { o.ctx = c.Context() })
	fl := cmd.Flags()
	addBackendFlag(cmd, &o.backend, "")
	fl.StringArrayVar(&o.kernelNames, "kernel", nil, "kernel family (repeatable; default all)")
	fl.StringArrayVar(&o.dtypes, "dtype", []string{"f32", "f16"}, "element types (repeatable): "+strings.Join(dtypeNames(), ", "))
	fl.IntVar(&o.sample, "sample", 1, "verify every N-th candidate only")
	fl.StringArrayVar(&o.where, "where", nil, "verify only candidates with this parameter value, e.g. MMA=1 (repeatable; all must hold)")
	fl.BoolVar(&o.asJSON, "json", false, "print JSON")
	fl.BoolVarP(&o.quiet, "quiet", "q", false, "print only the total")
	addBackendFlags(cmd, &o.backendOpts)
	return cmd
}

func runVerify(o *VerifyOptions) error {
	ks, err := parseKernels(o.kernelNames)
	if err != nil {
		return err
	}
	dts, err := parseDTypes(o.dtypes...)
	if err != nil {
		return err
	}
	if o.sample < 1 {
		return usageErrorf("--sample must be at least 1")
	}
	filters, err := parseWhere(o.where)
	if err != nil {
		return err
	}
	log := o.IO.ErrOut
	b, err := pickBackend(o.backend, log, false, o.backendOpts)
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
			i := slices.IndexFunc(sp.Params, func(p params.Param) bool { return p.Name == name })
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
