package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// Exit codes: 1 for a failure while working, 2 for bad input (flags, names,
// shapes, files, a budget too small to compare anything) and for a backend
// that is not available; a tune stopped by SIGINT or SIGTERM exits 130 or 143
// (see interruptedError).
const (
	exitFailure = 1
	exitUsage   = 2
)

// usageError marks errors caused by what the user asked for; they exit with code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// usageErrorCause is a usage error with a message of its own that still
// wraps cause, for errors.Is and errors.As.
func usageErrorCause(cause error, format string, args ...any) error {
	return usageError{causedError{msg: fmt.Sprintf(format, args...), cause: cause}}
}

type causedError struct {
	msg   string
	cause error
}

func (e causedError) Error() string { return e.msg }
func (e causedError) Unwrap() error { return e.cause }

func newRootCmd(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "kerntune",
		Short: "Autotune GPU kernels by measurement and write hardware_params.json",
		Long: `kerntune enumerates the valid parameter candidates of each kernel family and
shape class, verifies every candidate against a float64 reference, times it on
the device, prunes the losers and records the winners per device in
hardware_params.json. Applications load that file with the params package;
environment variables override any value.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{plainFlagError(err)} })
	for _, add := range commands {
		root.AddCommand(add(f))
	}
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	registerCompletions(root)
	strictCompletionCmd(root)
	return root
}

// commands holds the constructors of the subcommands; each command's file adds its own.
var commands []func(*Factory) *cobra.Command

func main() {
	os.Exit(run(os.Args[1:]))
}

// run runs the command line with the process's standard streams and
// returns the exit code.
func run(args []string) int { return runWith(systemFactory(), args) }

// runWith runs the command line with f's streams and returns the exit code.
func runWith(f *Factory, args []string) int {
	root := newRootCmd(f)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	fmt.Fprintln(f.IO.ErrOut, "kerntune:", err)
	var ec interface{ ExitCode() int }
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	var ue usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		return exitUsage
	}
	return exitFailure
}

// isCobraUsage recognises cobra's own argument errors (unknown command, wrong arg count).
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "accepts ", "requires at least", "requires at most", "unknown flag", "unknown shorthand", "invalid argument"} {
		if contains(msg, p) {
			return true
		}
	}
	return false
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// printJSON writes v as indented JSON, as every --json output is.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// newTable is a table on w in the layout every text table has: columns
// separated by tabs, padded to two spaces.
func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }

// Bounds of count flags: a batch is compiled at once (its sources held in
// memory), and no run measures a million candidates.
const (
	maxBatch = 4096
	maxCount = 1_000_000
)

// countFlag checks a count flag's value against the range it takes: every
// count has an upper bound, so that a typo cannot ask for a run that never
// ends or memory the machine does not have.
// note says what a value means ("0: automatic"), where it helps.
// atMostArgs accepts no argument or one, what; the error names the
// command, what it takes and what it got, where cobra's counts the
// arguments only.
func atMostArgs(what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > 1 {
			return usageErrorf("%s takes at most one argument (%s); got %d: %s", cmd.CommandPath(), what, len(args), strings.Join(args, " "))
		}
		return nil
	}
}

// oneArg accepts exactly one argument, what.
func oneArg(what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != 1 {
			return usageErrorf("%s takes one argument (%s); got %d%s", cmd.CommandPath(), what, len(args), strings.TrimRight(": "+strings.Join(args, " "), ": "))
		}
		return nil
	}
}

// maxSample bounds the candidate counts of check and verify: larger than
// any family's or spec's space, so every meaningful value is allowed.
const maxSample = 1000000

func countFlag(name string, v, lo, hi int, note string) error {
	if v < lo || v > hi {
		if note != "" {
			note = " (" + note + ")"
		}
		return usageErrorf("--%s is %d; must be %d..%d%s", name, v, lo, hi, note)
	}
	return nil
}

// flagParseRE matches pflag's message for a value its type cannot parse,
// which quotes strconv's own ("strconv.ParseUint: parsing "abc": invalid
// syntax").
var flagParseRE = regexp.MustCompile(`^invalid argument "(.*)" for "(.*)" flag: strconv\.Parse(Uint|Int|Float|Bool)\b.*?(invalid syntax|value out of range)$`)

// plainFlagError says what a flag takes where pflag would print strconv's
// message.
func plainFlagError(err error) error {
	m := flagParseRE.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	want := map[string]string{"Uint": "a non-negative integer", "Int": "an integer", "Float": "a number", "Bool": "true or false"}[m[3]]
	if m[4] == "value out of range" {
		want += " of at most 64 bits"
	}
	return fmt.Errorf("%s %q: must be %s", m[2], m[1], want)
}
