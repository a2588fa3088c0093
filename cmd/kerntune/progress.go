package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"

	"github.com/kerntune/kerntune/report"
	"github.com/kerntune/kerntune/tuner"
)

// progressUI shows a tuning run's progress. On a terminal it draws a live
// bar for the entry being tuned (candidates measured of valid, best so far,
// elapsed and the time left of the entry's share) above a bar for the whole
// run, and prints log lines above the bars. Anywhere else (CI, pipes, files)
// it only passes the plain log lines through, so nothing is garbled.
type progressUI struct {
	out io.Writer // the raw log destination
	p   *mpb.Progress

	mu       sync.Mutex
	closed   bool
	total    *mpb.Bar
	bar      *mpb.Bar
	stop     chan struct{} // ends the ticker of the current bar
	barTotal int64         // the current bar's total (its share in ms)

	sendMu      sync.RWMutex // Write holds it shared while queueing; close exclusively to close the queue
	lines       chan []byte
	linesClosed bool
	linesDone   chan struct{}
	ev          tuner.Event   // the last event of the current entry
	start       time.Time     // when the current entry started
	share       time.Duration // its share of the budget
}

// newProgressUI returns the display for a run of n entries within budget.
// quiet discards the log; bars are drawn only when w is a terminal and
// $TERM is not "dumb".
func newProgressUI(w io.Writer, quiet bool, n int, budget time.Duration) *progressUI {
	u := &progressUI{out: w}
	if quiet {
		u.out = io.Discard
		return u
	}
	if !isTerminal(w) {
		return u
	}
	u.p = mpb.New(mpb.WithOutput(w), mpb.WithWidth(100), mpb.WithRefreshRate(200*time.Millisecond))
	u.lines, u.linesDone = make(chan []byte, 4096), make(chan struct{})
	go u.printLines()
	runStart := time.Now()
	u.total = u.p.AddBar(int64(n),
		mpb.BarPriority(1<<30), // always the last line
		mpb.PrependDecorators(decor.Name("all entries", decor.WC{W: 34, C: decor.DindentRight}),
			decor.CountersNoUnit("%d/%d", decor.WC{W: 8})),
		mpb.AppendDecorators(decor.Any(func(decor.Statistics) string {
			el := time.Since(runStart)
			return fmt.Sprintf("%s elapsed, budget left %s", fmtDur(el), fmtDur(max(0, budget-el)))
		})),
	)
	return u
}

// isTerminal reports whether w is a character device a person is watching.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	if !term.IsTerminal(int(f.Fd())) {
		return false
	}
	// A pseudo-terminal without a size (some CI runners) cannot draw bars.
	cols, _, err := term.GetSize(int(f.Fd()))
	return err == nil && cols > 0
}

// Write prints a log line: above the bars while they are drawn, else plainly.
// mpb prints lines at its next refresh and blocks the writer until then, so
// lines go through a queue: logging never stalls the tuning goroutine.
func (u *progressUI) Write(b []byte) (int, error) {
	if u.p != nil {
		u.sendMu.RLock()
		defer u.sendMu.RUnlock()
		if !u.linesClosed {
			u.lines <- append([]byte(nil), b...)
			return len(b), nil
		}
	}
	return u.out.Write(b)
}

// printLines is the queue's reader.
func (u *progressUI) printLines() {
	defer close(u.linesDone)
	for b := range u.lines {
		if _, err := u.p.Write(b); err != nil {
			u.out.Write(b)
		}
	}
}

// begin starts the bar of an entry that has share of the budget.
// The mutex is never held while calling into mpb: its renderer calls status,
// which takes the mutex.
func (u *progressUI) begin(task tuner.Task, share time.Duration) {
	if u.p == nil {
		return
	}
	u.mu.Lock()
	u.ev, u.start, u.share = tuner.Event{Task: task}, time.Now(), share
	start := u.start
	u.mu.Unlock()
	total := max(1, share.Milliseconds())
	bar := u.p.AddBar(total, mpb.BarRemoveOnComplete(),
		mpb.PrependDecorators(decor.Name(fmt.Sprintf("%-10s %s", task.Kernel.Name, task.Key()), decor.WC{W: 34, C: decor.DindentRight})),
		mpb.AppendDecorators(decor.Any(func(decor.Statistics) string { return u.status() })),
	)
	stop := make(chan struct{})
	u.mu.Lock()
	u.bar, u.stop, u.barTotal = bar, stop, total
	u.mu.Unlock()
	go u.tick(bar, start, total, stop)
}

// tick moves the entry's bar with the clock: the budget share is what bounds
// an entry, so elapsed over share is its honest fraction done.
func (u *progressUI) tick(bar *mpb.Bar, start time.Time, total int64, stop chan struct{}) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			bar.SetCurrent(min(total-1, time.Since(start).Milliseconds()))
		}
	}
}

func (u *progressUI) status() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	ev := u.ev
	s := fmt.Sprintf("%d/%d measured, %d failed", ev.Measured, ev.Valid, ev.Failed)
	if ev.BestKey != "" {
		s += fmt.Sprintf(", best %s", report.FormatUS(ev.BestUS))
	}
	el := time.Since(u.start)
	return s + fmt.Sprintf(", %s, left ≤%s", fmtDur(el), fmtDur(max(0, u.share-el)))
}

// event records a tuner event for the current bar.
func (u *progressUI) event(ev tuner.Event) {
	u.mu.Lock()
	u.ev = ev
	u.mu.Unlock()
}

// end completes the current entry's bar.
func (u *progressUI) end() {
	if u.p == nil {
		return
	}
	u.mu.Lock()
	bar, stop, total := u.bar, u.stop, u.barTotal
	u.bar, u.stop = nil, nil
	u.mu.Unlock()
	if bar == nil {
		return
	}
	close(stop)
	bar.SetCurrent(total) // reaching the total completes and removes the bar
	u.total.Increment()
}

// close removes the bars; later log lines are printed plainly.
func (u *progressUI) close() {
	if u.p == nil {
		return
	}
	u.end()
	u.mu.Lock()
	done := u.closed
	u.closed = true
	u.mu.Unlock()
	if done {
		return
	}
	u.sendMu.Lock()
	u.linesClosed = true
	close(u.lines)
	u.sendMu.Unlock()
	<-u.linesDone // every queued line is printed above the bars
	u.total.Abort(false)
	// Bars finish on their last render; should the terminal stop rendering
	// (closed, resized to nothing), do not wait for it forever.
	waited := make(chan struct{})
	go func() { u.p.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(2 * time.Second):
		u.p.Shutdown()
	}
}

func fmtDur(d time.Duration) string {
	s := int(d.Round(time.Second).Seconds())
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}
