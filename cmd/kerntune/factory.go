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

// jsonOnlyCmd is a command of no arguments whose one flag is --json
// (kernels, version, devices); run is its work, json the options' field
// --json sets.
func jsonOnlyCmd(use, short string, json *bool, run func() error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE:  func(*cobra.Command, []string) error { return run() },
	}
	cmd.Flags().BoolVar(json, "json", false, "print JSON")
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
