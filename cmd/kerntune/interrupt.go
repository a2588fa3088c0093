package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/kerntune/kerntune/tuner"
)

// signalWatch cancels a run on SIGINT or SIGTERM and remembers which
// signal came, for the exit code.
type signalWatch struct {
	ch   chan os.Signal
	done chan struct{}
	mu   sync.Mutex
	got  os.Signal
}

func notifySignals(cancel context.CancelFunc) *signalWatch {
	w := &signalWatch{ch: make(chan os.Signal, 1), done: make(chan struct{})}
	signal.Notify(w.ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-w.ch:
			w.mu.Lock()
			w.got = s
			w.mu.Unlock()
			cancel()
		case <-w.done:
		}
	}()
	return w
}

// stop restores the default handling of the signals.
func (w *signalWatch) stop() {
	signal.Stop(w.ch)
	close(w.done)
}

// received is the signal that stopped the run, or nil.
func (w *signalWatch) received() os.Signal {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.got
}

// interruptedError ends a run stopped by a signal after it wrote what it
// finished; the process exits 128 + the signal's number, as a shell
// reports a process killed by it (130 for SIGINT, 143 for SIGTERM).
type interruptedError struct {
	sig     os.Signal
	written int
	journal string
}

func (e interruptedError) Error() string {
	return fmt.Sprintf("interrupted by %s after writing %s; the journal %s keeps the measurements: finish the run with the same command and --resume",
		signalName(e.sig), plural(e.written, "entry", "entries"), e.journal)
}

func (e interruptedError) ExitCode() int {
	if s, ok := e.sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 128 + int(syscall.SIGINT)
}

func signalName(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// budgetTooSmall is the usage error for a budget (as --budget gave it)
// that measured nothing beyond the default.
func budgetTooSmall(budget string, e *tuner.TooSmallError, spent time.Duration) error {
	if e.EvaluationsSpent() {
		return fmt.Errorf("--budget %s is too small: %w; give at least 2 evaluations per entry (e.g. --budget 2e; more find better winners)", budget, e)
	}
	needed := e.Result.Needed
	if needed <= 0 {
		return fmt.Errorf("--budget %s is too small: %w; give a larger --budget", budget, e)
	}
	total := roundUpDuration(needed*time.Duration(e.Entries) + spent)
	if spent > 0 {
		// A resumed run: the interrupted run's time counts against --budget.
		return fmt.Errorf("--budget %s is too small: %w; one more candidate there needs about %s, so the %s left need about %s, and with the %s the interrupted run spent --budget %s or more (more find better winners)",
			budget, e, roundUpDuration(needed), plural(e.Entries, "entry", "entries"), roundUpDuration(needed*time.Duration(e.Entries)), spent.Round(100*time.Millisecond), total)
	}
	if e.Written > 0 {
		// A shared budget: the other entries fitted, this one did not.
		return fmt.Errorf("--budget %s is too small for every entry: %w; one more candidate of %s %s needs about %s: give a larger --budget, or tune it alone (--kernel %s)",
			budget, e, e.Result.Task.Kernel.Name, e.Result.Task.Key(), roundUpDuration(needed), e.Result.Task.Kernel.Name)
	}
	return fmt.Errorf("--budget %s is too small: %w; one more candidate there needs about %s, so the %s of this run need --budget %s or more (more find better winners)",
		budget, e, roundUpDuration(needed), plural(e.Entries, "entry", "entries"), total)
}

// roundUpDuration rounds d up to a whole second, or a whole minute above ten.
func roundUpDuration(d time.Duration) time.Duration {
	unit := time.Second
	if d > 10*time.Minute {
		unit = time.Minute
	}
	return (d + unit - 1) / unit * unit
}
