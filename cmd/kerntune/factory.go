package main

import (
	"io"
	"os"

	"github.com/spf13/cobra"
)

// IOStreams are where a command reads and writes: the process's standard
// streams in main, buffers in tests, so that a test runs a command
// in-process, in parallel with others, without touching os.Stdout.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// Factory holds what the commands take from their surroundings. Every
// command is built as NewCmdX(f, runF): f gives it its streams, and runF,
// when not nil, replaces the command's work, so a test can check how flags
// and arguments become the options struct without running anything.
type Factory struct {
	IO IOStreams
}

// systemFactory is the factory of the kerntune process: its standard streams.
func systemFactory() *Factory {
	return &Factory{IO: IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}}
}

// JSONOnlyOptions are what a command of no arguments whose one flag is
// --json (kernels, version, devices) is asked to do: that flag and its
// streams.
type JSONOnlyOptions struct {
	IO   IOStreams
	JSON bool     // --json
	fac  *Factory // opens backends (devices)
}

// newJSONOnlyCmd builds such a command; runF, when not nil, runs instead
// of run, the command's work.
func newJSONOnlyCmd(f *Factory, use, short string, runF, run func(*JSONOnlyOptions) error) *cobra.Command {
	o := &JSONOnlyOptions{IO: f.IO, fac: f}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE:  func(*cobra.Command, []string) error { return runOr(o, runF, run) },
	}
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print JSON")
	return cmd
}

// runOr runs a command's options through runF when a test gave one, else
// through run, the command's work: the last step of every RunE.
func runOr[O any](opts *O, runF, run func(*O) error) error {
	if runF != nil {
		return runF(opts)
	}
	return run(opts)
}

// cmdHelp is a command's usage line, one-line summary, help text and
// examples.
type cmdHelp struct{ use, short, long, example string }

// newCmd builds the command of help h, of no arguments (a command that
// takes some sets Args), that runs o through runOr; before, when not nil,
// first reads into o what only the running command knows (its context,
// its arguments, which flags were set).
func newCmd[O any](h cmdHelp, o *O, runF, run func(*O) error, before func(*cobra.Command, []string)) *cobra.Command {
	return &cobra.Command{
		Use:     h.use,
		Short:   h.short,
		Long:    h.long,
		Example: h.example,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if before != nil {
				before(cmd, args)
			}
			return runOr(o, runF, run)
		},
	}
}
