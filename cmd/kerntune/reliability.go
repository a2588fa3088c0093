package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/kerntune/kerntune/tuner"
	"github.com/kerntune/kerntune/tuner/device"
	"github.com/kerntune/kerntune/tuner/worker"
)

// openForTune opens the backend a tune runs on ("auto": the first of
// device.AutoOrder that opens), in a worker process where isolation is on
// (--isolate, by default for the backends whose traits say so: the GPU
// backends, where one faulting kernel can poison a GPU context for good).
func openForTune(f TuneOptions, log io.Writer) (device.Backend, error) {
	b, err := f.fac.OpenBackend(backendRequest{Name: f.backend, Opts: f.backendOpts, Log: log, Verbose: f.verbose,
		Isolate: &isolation{set: f.isolateSet, on: f.isolate, specs: f.specs, timeout: f.candTimeout}})
	if err != nil {
		return nil, err
	}
	if _, ok := b.(*worker.Backend); ok {
		fmt.Fprintf(log, "candidates run in a worker process (limit %s per call)\n", f.candTimeout)
	}
	return b, nil
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
