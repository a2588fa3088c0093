package osthread

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
)

// Config says what a Thread reports and how it knows itself.
type Config struct {
	// Self is the calling OS thread's id, 0 when unknown (nil: ID); Do
	// and Stop called from the thread itself return Reentrant (they would
	// wait on themselves).
	Self func() uintptr
	// Setup runs first on the thread; an error from it ends the thread and
	// is Start's.
	Setup func() error
	// Closed is Do's error once the thread is stopped or gone; Reentrant
	// Do's and Stop's when called from the thread; Goexit the answer to a
	// closure that ended the goroutine with runtime.Goexit (t.FailNow in a
	// test, say), after which the thread is gone.
	Closed, Reentrant, Goexit error
}

// Thread is the locked goroutine. Its methods may be called from any
// goroutine.
type Thread struct {
	cfg    Config
	tid    atomic.Uintptr // Self of the thread; 0 before it runs and after it ends
	reqs   chan request
	exited chan struct{}
	mu     sync.RWMutex // guards closed and sends on reqs
	closed bool
}

type request struct {
	fn   func() error
	done chan error
}

// Start locks a new goroutine to its thread, runs cfg.Setup there and
// returns when it is ready to serve Do.
func Start(cfg Config) (*Thread, error) {
	if cfg.Closed == nil || cfg.Reentrant == nil || cfg.Goexit == nil {
		return nil, errors.New("osthread: Config needs its Closed, Reentrant and Goexit errors")
	}
	if cfg.Self == nil {
		cfg.Self = ID
	}
	t := &Thread{cfg: cfg, reqs: make(chan request), exited: make(chan struct{})}
	ready := make(chan error, 1)
	go t.run(ready)
	if err := <-ready; err != nil {
		<-t.exited
		return nil, err
	}
	return t, nil
}

func (t *Thread) run(ready chan<- error) {
	defer close(t.exited)
	runtime.LockOSThread()
	t.tid.Store(t.cfg.Self())
	defer t.tid.Store(0)
	var err error
	if t.cfg.Setup != nil {
		err = t.cfg.Setup()
	}
	ready <- err
	if err != nil {
		return
	}
	for r := range t.reqs {
		t.serve(r)
	}
}

// serve answers one request, even when its closure ends the goroutine.
func (t *Thread) serve(r request) {
	answered := false
	defer func() {
		if !answered {
			r.done <- t.cfg.Goexit
		}
	}()
	err := r.fn()
	answered = true
	r.done <- err
}

// OnThread reports whether the caller is the thread (always false where
// Config.Self returns 0).
func (t *Thread) OnThread() bool {
	id := t.cfg.Self()
	return id != 0 && id == t.tid.Load()
}

// Do runs fn on the thread and returns its error, after the closures
// already queued. fn must not call Do or Stop (Reentrant), and recovers
// its own panics (the callers turn them into errors with their context).
func (t *Thread) Do(fn func() error) error {
	if t.OnThread() {
		return t.cfg.Reentrant
	}
	t.mu.RLock()
	if t.closed {
		t.mu.RUnlock()
		return t.cfg.Closed
	}
	done := make(chan error, 1)
	select {
	case t.reqs <- request{fn: fn, done: done}:
	case <-t.exited:
		t.mu.RUnlock()
		return t.cfg.Closed
	}
	t.mu.RUnlock()
	return <-done
}

// Stop runs final on the thread (when not nil and the thread is still
// there), then ends the thread and waits for it; later Do calls return
// Closed. It returns final's error; a second Stop returns nil.
func (t *Thread) Stop(final func() error) error {
	if t.OnThread() {
		return t.cfg.Reentrant
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		<-t.exited
		return nil
	}
	t.closed = true
	var err error
	if final == nil {
		close(t.reqs)
		t.mu.Unlock()
	} else {
		done := make(chan error, 1)
		select {
		case t.reqs <- request{fn: final, done: done}:
			close(t.reqs)
			t.mu.Unlock()
			err = <-done
		case <-t.exited: // the goroutine is gone (runtime.Goexit in a closure)
			close(t.reqs)
			t.mu.Unlock()
		}
	}
	<-t.exited
	return err
}
