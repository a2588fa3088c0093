package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kerntune/kerntune/tuner/device"
	"github.com/kerntune/kerntune/tuner/worker"
)

// noteOpen appends "who name" to the file KTDEV_OPENS names, if any: the
// backends opened by a test and the kerntune processes it starts.
func noteOpen(who, name string) {
	path := os.Getenv("KTDEV_OPENS")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	fmt.Fprintf(f, "%s %s\n", who, name)
}

// TestMain lets the test binary stand in for kerntune: started with
// KTDEV_AS_KERNTUNE set it runs the command line it was given, so tests can
// kill a real tuning process and start worker processes (os.Executable is
// this binary). KTDEV_FAULT makes listed candidates crash or hang in the
// worker; KTDEV_FSIZE limits the size of files it writes (a full disk);
// KTDEV_STOP_AT=N:JOURNAL stops the process (SIGSTOP) once the journal
// holds N measurements, for a test to kill it there.
func TestMain(m *testing.M) {
	if os.Getenv("KTDEV_AS_KERNTUNE") == "" {
		os.Exit(m.Run())
	}
	workerWrap = func(b device.Backend) (device.Backend, error) {
		faults, err := worker.ParseFaults(os.Getenv("KTDEV_FAULT"))
		if err != nil {
			return nil, err
		}
		return worker.WithFaults(b, faults), nil
	}
	opened = func(name string) { noteOpen("process", name) }
	if err := stopAt(os.Getenv("KTDEV_STOP_AT")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := limitFileSize(os.Getenv("KTDEV_FSIZE")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(run(os.Args[1:]))
}

// stopAt starts the watch KTDEV_STOP_AT asks for ("N:JOURNAL"; "" none): a
// goroutine of this process, so the process cannot run far past N however
// busy the machine is.
func stopAt(v string) error {
	if v == "" {
		return nil
	}
	ns, journal, ok := strings.Cut(v, ":")
	n, err := strconv.Atoi(ns)
	if !ok || err != nil || n < 1 {
		return fmt.Errorf("KTDEV_STOP_AT=%q: want N:JOURNAL", v)
	}
	go func() {
		for {
			if m, _ := journalCounts(journal); m >= n {
				syscall.Kill(os.Getpid(), syscall.SIGSTOP)
				return
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	return nil
}
