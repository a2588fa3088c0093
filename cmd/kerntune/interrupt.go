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
// that measured nothing beyond the default in some entries. The budget it
// names is the one that failed plus what those entries need, by their own
// measurements, with half more for noise; families is how many kernel
// families the run tuned (--kernel is suggested only when there were more).
func budgetTooSmall(budgetS string, budget time.Duration, e *tuner.TooSmallError, families, minBeyond int) error {
	if e.EvaluationsSpent() {
		return fmt.Errorf("--budget %s is too small: %w; give at least 2 evaluations per entry (e.g. --budget 2e; more find better winners)", budgetS, e)
	}
	if e.Needed <= 0 {
		return fmt.Errorf("--budget %s is too small: %w; give a larger --budget", budgetS, e)
	}
	base := budget
	if base >= noWallLimit {
		base = 0
	}
	suggest := roundUpDuration(base + e.Needed*3/2)
	alone := ""
	if families > 1 && e.Written > 0 {
		alone = fmt.Sprintf(", or tune %s alone (--kernel %s)", e.Result.Task.Kernel.Name, e.Result.Task.Kernel.Name)
	}
	return fmt.Errorf("--budget %s is too small: %w; measuring %d candidates beyond the default there needs about %s more: give --budget %s or more%s",
		budgetS, e, minBeyond, roundUpDuration(e.Needed), suggest, alone)
}

// planTooSmall is the usage error for a budget the plan does not fit in.
func planTooSmall(budgetS string, e *tuner.PlanError) error {
	fewer := ""
	if e.Families > 1 {
		fewer = ", or tune fewer families (--kernel NAME)"
	}
	return fmt.Errorf("--budget %s is too small: %w; give --budget %s or more%s (nothing was tuned)", budgetS, e, roundUpDuration(e.Suggested()), fewer)
}

// roundUpDuration rounds d up to a whole second, or a whole minute above ten.
func roundUpDuration(d time.Duration) time.Duration {
	unit := time.Second
	if d > 10*time.Minute {
		unit = time.Minute
	}
	return (d + unit - 1) / unit * unit
}
