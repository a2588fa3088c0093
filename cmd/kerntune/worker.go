package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"

	"github.com/spf13/cobra"

	"github.com/kerntune/kerntune/tuner"
	"github.com/kerntune/kerntune/tuner/worker"
)

func init() { commands = append(commands, func(*Factory) *cobra.Command { return newWorkerCmd() }) }

// workerWrap, when set, wraps the worker's backend. Only test binaries and
// builds with the ktfault tag set it, to inject deliberately faulting
// candidates; the product leaves it nil.
var workerWrap func(tuner.Backend) (tuner.Backend, error)

// newWorkerCmd is the hidden command kerntune re-executes itself with to
// run a backend in a separate process (see package tuner/worker).
func newWorkerCmd() *cobra.Command {
	var (
		backend     string
		specs       []string
		backendOpts backendOptions
	)
	cmd := &cobra.Command{
		Use:    "__worker",
		Short:  "Serve a backend to a parent kerntune over stdin and stdout",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Ctrl-C reaches the whole process group: the parent stops the
			// run cleanly and closes our input, so we ignore it here.
			signal.Ignore(os.Interrupt)
			// The protocol owns stdout; anything a backend prints goes to stderr.
			proto := os.Stdout
			os.Stdout = os.Stderr
			if _, err := loadSpecs(specs); err != nil {
				return err
			}
			b, err := openBackend(backend, backendOpts)
			if errors.Is(err, tuner.ErrUnavailable) {
				// The parent's "auto" passes over a backend this machine
				// lacks: say so by the exit status.
				fmt.Fprintf(os.Stderr, "kerntune worker: --backend %s: %v\n", backend, err)
				os.Exit(worker.ExitUnavailable)
			}
			if err != nil {
				return usageError{fmt.Errorf("--backend %s: %w", backend, err)}
			}
			if workerWrap != nil {
				if b, err = workerWrap(b); err != nil {
					return usageError{err}
				}
			}
			if err := worker.Serve(b, os.Stdin, proto); err != nil {
				// The device may be unusable (a sticky CUDA error): exit
				// without touching it; the parent starts a fresh worker.
				fmt.Fprintln(os.Stderr, "kerntune worker:", err)
				os.Exit(3)
			}
			return b.Close()
		},
	}
	cmd.Flags().StringVar(&backend, "backend", "cpu", "backend to serve")
	cmd.Flags().StringArrayVar(&specs, "spec", nil, "kernel spec files whose kernels the parent tunes")
	addBackendFlags(cmd, &backendOpts)
	return cmd
}
