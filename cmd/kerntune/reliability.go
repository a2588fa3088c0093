package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/kerntune/kerntune/tuner"
	"github.com/kerntune/kerntune/tuner/worker"
)

// openForTune opens the backend a tune runs on ("auto": the first of
// tuner.AutoOrder that opens). Where isolation is on (--isolate, by default
// for the backends whose traits say so: the GPU backends, where one faulting
// kernel can poison a GPU context for good) only the worker process opens
// the device: the parent never does, so a GPU's warm-up and the device's
// facts are measured once, in the process that times. It refuses options
// the backend it opened does not take.
func openForTune(f TuneOptions, log io.Writer) (tuner.Backend, error) {
	if _, err := f.backendOpts.mathMode(); err != nil {
		return nil, err
	}
	var b tuner.Backend
	if f.backend != "auto" {
		var err error
		if b, err = openTuneBackend(f.backend, f, log); err != nil {
			return nil, usageError{fmt.Errorf("--backend %s: %w", f.backend, err)}
		}
	} else if b = tuner.OpenAuto("", func(n string) (tuner.Backend, error) { return openTuneBackend(n, f, log) }, notUsed(log, f.verbose)); b == nil {
		return nil, usageErrorf("no backend could be opened")
	}
	if err := checkBackendOptions(b, f.backendOpts); err != nil {
		b.Close()
		return nil, err
	}
	if _, ok := b.(*worker.Backend); ok {
		fmt.Fprintf(log, "candidates run in a worker process (limit %s per call)\n", f.candTimeout)
	}
	return b, nil
}

// openTuneBackend opens one named backend: in a worker process when
// isolation is on for it, else in this process.
func openTuneBackend(name string, f TuneOptions, log io.Writer) (tuner.Backend, error) {
	traits, err := tuner.TraitsOf(name)
	if err != nil {
		return nil, err
	}
	on := traits.Isolate
	if f.isolateSet {
		on = f.isolate
	}
	if !on {
		return openBackend(name, f.backendOpts)
	}
	cmdline, err := worker.Command(name)
	if err != nil {
		return nil, err
	}
	// Spec kernels live in registries: the worker loads the same specs.
	for _, s := range f.specs {
		cmdline = append(cmdline, "--spec", s)
	}
	cmdline = append(cmdline, f.backendOpts.args()...)
	wb, err := worker.Open(worker.Options{Command: cmdline, Timeout: f.candTimeout, Log: log})
	if err != nil {
		return nil, fmt.Errorf("--isolate: %w", err)
	}
	return wb, nil
}

// checkOutDir refuses, before any work, an --out whose directory cannot be
// written (the merge writes a temporary file there and renames it).
func checkOutDir(path string) error { return checkOutputDir("--out", path) }

// journalStateError is the usage error for the journal of an interrupted
// run in the way (err: os.ErrExist, without --resume) or missing (err:
// os.ErrNotExist, with --resume); nil for any other err.
func journalStateError(f TuneOptions, err error) error {
	path := tuner.JournalPath(f.out)
	switch {
	case f.resume && errors.Is(err, os.ErrNotExist):
		return usageErrorf("--resume: no journal %s: there is no interrupted run of --out %s to finish", path, f.out)
	case !f.resume && errors.Is(err, os.ErrExist):
		return usageErrorf("--out %s: the journal %s of an interrupted run exists; finish that run with --resume (same flags) or delete the journal", f.out, path)
	}
	return nil
}

// journalOpenError is the usage error for a journal tuner.OpenSession
// could not open.
func journalOpenError(f TuneOptions, err error) error {
	if e := journalStateError(f, err); e != nil {
		return e
	}
	return usageErrorf("journal %s: %w", tuner.JournalPath(f.out), err)
}

func validateReliabilityFlags(f TuneOptions) error {
	_, err := os.Stat(tuner.JournalPath(f.out))
	if err == nil {
		err = os.ErrExist
	}
	if e := journalStateError(f, err); e != nil {
		return e
	}
	if f.candTimeout <= 0 {
		return usageErrorf("--candidate-timeout must be positive, got %s", f.candTimeout)
	}
	if f.candTimeout < time.Second {
		return usageErrorf("--candidate-timeout %s is too short to build and verify a candidate (at least 1s)", f.candTimeout)
	}
	return nil
}
