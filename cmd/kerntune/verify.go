package main

import (
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

func init() { commands = append(commands, func(*Factory) *cobra.Command { return newVerifyCmd() }) }

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

func newVerifyCmd() *cobra.Command {
	var (
		backend       string
		kernelNames   []string
		dtypes        []string
		sample        int
		where         []string
		asJSON, quiet bool
		backendOpts   backendOptions
	)
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Build and verify every candidate of every family on small odd shapes",
		Long: `verify builds every valid candidate of each family on the device (or every
--sample-th one) and checks it against the float64 reference on shapes that are
not multiples of any tile, with the output poisoned first. Failures are counted
by reason; the command fails if any candidate fails.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ks, err := parseKernels(kernelNames)
			if err != nil {
				return err
			}
			dts, err := parseDTypes(dtypes...)
			if err != nil {
				return err
			}
			if sample < 1 {
				return usageErrorf("--sample must be at least 1")
			}
			filters, err := parseWhere(where)
			if err != nil {
				return err
			}
			log := cmd.ErrOrStderr()
			b, err := pickBackend(backend, log, false, backendOpts)
			if err != nil {
				return err
			}
			defer b.Close()
			if err := checkWhere(ks, b.Info().Backend, where, false); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			tu := tuner.New(b, tuner.Config{})
			var reps []verifyJSON
			failed, total := 0, 0
			for _, k := range ks {
				for _, dt := range dts {
					rep, err := tu.VerifyAll(ctx, k, dt, sample, filters...)
					if err != nil {
						return err
					}
					v := verifyJSON{k.Name, string(dt), rep.Valid, rep.Checked, rep.Passed, rep.Failed, rep.Example, rep.Elapsed.Seconds()}
					reps = append(reps, v)
					failed += rep.Checked - rep.Passed
					total += rep.Checked
					if !quiet {
						fmt.Fprintf(log, "%-10s %s  %d/%s passed (%d valid) in %.1fs\n", k.Name, dt, rep.Passed, plural(rep.Checked, "candidate", "candidates"), rep.Valid, rep.Elapsed.Seconds())
						for _, r := range rep.Reasons() {
							fmt.Fprintf(log, "    %5d × %s  (e.g. %s)\n", rep.Failed[r], r, rep.Example[r])
						}
					}
				}
			}
			if asJSON {
				if err := printJSON(cmd.OutOrStdout(), map[string]any{"device": b.Info().Key, "reports": reps}); err != nil {
					return err
				}
			}
			if total == 0 && len(where) > 0 {
				return usageErrorf("--where %s: no candidate of the selected families has these parameter values", strings.Join(where, " "))
			}
			fmt.Fprintf(log, "verified %s on %s: %d passed, %d failed\n", plural(total, "candidate", "candidates"), b.Info().Key, total-failed, failed)
			if failed > 0 {
				return fmt.Errorf("%d of %s failed verification", failed, plural(total, "candidate", "candidates"))
			}
			return nil
		},
	}
	fl := cmd.Flags()
	addBackendFlag(cmd, &backend, "")
	fl.StringArrayVar(&kernelNames, "kernel", nil, "kernel family (repeatable; default all)")
	fl.StringArrayVar(&dtypes, "dtype", []string{"f32", "f16"}, "element types (repeatable): "+strings.Join(dtypeNames(), ", "))
	fl.IntVar(&sample, "sample", 1, "verify every N-th candidate only")
	fl.StringArrayVar(&where, "where", nil, "verify only candidates with this parameter value, e.g. MMA=1 (repeatable; all must hold)")
	fl.BoolVar(&asJSON, "json", false, "print JSON")
	fl.BoolVarP(&quiet, "quiet", "q", false, "print only the total")
	addBackendFlags(cmd, &backendOpts)
	return cmd
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
