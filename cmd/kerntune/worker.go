package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"

	"github.com/spf13/cobra"

	"github.com/kerntune/kerntune/tuner/device"
	"github.com/kerntune/kerntune/tuner/worker"
)

func init() {
	commands = append(commands, func(f *Factory) *cobra.Command { return NewCmdWorker(f, nil) })
}

// workerWrap, when set, wraps the worker's backend. Only test binaries and
// builds with the ktfault tag set it, to inject deliberately faulting
// candidates; the product leaves it nil.
var workerWrap func(device.Backend) (device.Backend, error)

// WorkerOptions are what __worker is asked to do: its flags and its streams.
type WorkerOptions struct {
	IO          IOStreams
	fac         *Factory // opens the backend
	backend     string
	specs       []string
	backendOpts backendOptions
}

// workerHelp is worker's usage line, summary and help.
var workerHelp = cmdHelp{
	use:   "__worker",
	short: "Serve a backend to a parent kerntune over stdin and stdout",
}

// NewCmdWorker builds the hidden command kerntune re-executes itself with
// to run a backend in a separate process (see package tuner/worker); runF,
// when not nil, runs instead of runWorker.
func NewCmdWorker(f *Factory, runF func(*WorkerOptions) error) *cobra.Command {
	o := &WorkerOptions{IO: f.IO, fac: f}
	cmd := newCmd(workerHelp, o, runF, runWorker, nil)
	cmd.Hidden = true
	cmd.Flags().StringVar(&o.backend, "backend", "cpu", "backend to serve")
	cmd.Flags().StringArrayVar(&o.specs, "spec", nil, "kernel spec files whose kernels the parent tunes")
	addBackendFlags(cmd, &o.backendOpts)
	return cmd
}

// runWorker serves on the process's own streams, not o.IO: a worker is
// always a process of its own, and it must move os.Stdout, which backends
// may print to, out of the protocol's way.
func runWorker(o *WorkerOptions) error {
	// Ctrl-C reaches the whole process group: the parent stops the
	// run cleanly and closes our input, so we ignore it here.
	signal.Ignore(os.Interrupt)
	// The protocol owns stdout; anything a backend prints goes to stderr.
	proto := os.Stdout
	os.Stdout = os.Stderr
	if _, err := loadSpecs(o.specs); err != nil {
		return err
	}
	b, err := o.fac.OpenBackend(backendRequest{Name: o.backend, Opts: o.backendOpts, Bare: true})
	if errors.Is(err, device.ErrUnavailable) {
		// The parent's "auto" passes over a backend this machine
		// lacks: say so by the exit status.
		fmt.Fprintf(os.Stderr, "kerntune worker: --backend %s: %v\n", o.backend, err)
		os.Exit(worker.ExitUnavailable)
	}
	if err != nil {
		return usageError{fmt.Errorf("--backend %s: %w", o.backend, err)}
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
}
