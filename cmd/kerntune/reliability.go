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

// isolateBackend replaces b by the same backend in a worker process when
// --isolate says so, by default for the backends whose traits say so (the
// GPU backends: one faulting kernel can poison a GPU context for good).
func isolateBackend(b tuner.Backend, f tuneFlags, log io.Writer) (tuner.Backend, error) {
	name := b.Info().Backend
	traits, err := tuner.TraitsOf(name)
	if err != nil {
		return nil, err
	}
	on := traits.Isolate
	if f.isolateSet {
		on = f.isolate
	}
	if !on {
		return b, nil
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
	// The device is opened by the worker from now on.
	b.Close()
	wb, err := worker.Open(worker.Options{Command: cmdline, Timeout: f.candTimeout, Log: log})
	if err != nil {
		return nil, fmt.Errorf("--isolate: %w", err)
	}
	fmt.Fprintf(log, "candidates run in a worker process (limit %s per call)\n", f.candTimeout)
	return wb, nil
}

// checkOutDir refuses, before any work, an --out whose directory cannot be
// written (the merge writes a temporary file there and renames it).
func checkOutDir(path string) error { return checkOutputDir("--out", path) }

// journalStateError is the usage error for the journal of an interrupted
// run in the way (err: os.ErrExist, without --resume) or missing (err:
// os.ErrNotExist, with --resume); nil for any other err.
func journalStateError(f tuneFlags, err error) error {
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
func journalOpenError(f tuneFlags, err error) error {
	if e := journalStateError(f, err); e != nil {
		return e
	}
	return usageErrorf("journal %s: %w", tuner.JournalPath(f.out), err)
}

func validateReliabilityFlags(f tuneFlags) error {
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
