//go:build darwin

package metal

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

var (
	errClosed    = errors.New("metal backend: closed")
	errReentrant = errors.New("metal backend: GPU-thread call made from the GPU thread")
)

// gpuThread is the goroutine that talks to the command queue, locked to
// one OS thread for its whole life (as the CUDA backend's context thread):
// command buffers and encoders are used from one thread, and each closure
// runs inside an autorelease pool pushed and popped on that thread. Calls
// from any goroutine are marshalled to it and serialized.
type gpuThread struct {
	rt     *runtimeLib
	tid    atomic.Uintptr // pthread_self of the GPU thread
	reqs   chan gpuRequest
	exited chan struct{}
	mu     sync.RWMutex // guards closed and sends on reqs
	closed bool
}

type gpuRequest struct {
	fn   func() error
	done chan error
}

func startGPUThread(r *runtimeLib) *gpuThread {
	g := &gpuThread{rt: r, reqs: make(chan gpuRequest), exited: make(chan struct{})}
	ready := make(chan struct{})
	go g.loop(ready)
	<-ready
	return g
}

// loop never unlocks its thread: the runtime then discards the thread when
// the goroutine exits, with whatever Objective-C state it holds.
func (g *gpuThread) loop(ready chan<- struct{}) {
	defer close(g.exited)
	runtime.LockOSThread()
	g.tid.Store(g.rt.pthreadSelf())
	close(ready)
	for r := range g.reqs {
		g.serve(r)
	}
}

// serve answers one request, even if the closure ends the goroutine with
// runtime.Goexit.
func (g *gpuThread) serve(r gpuRequest) {
	answered := false
	defer func() {
		if !answered {
			r.done <- errors.New("metal backend: runtime.Goexit on the GPU thread; the backend is unusable")
		}
	}()
	err := g.invoke(r.fn)
	answered = true
	r.done <- err
}

// invoke runs fn in an autorelease pool; a Go panic in fn becomes an error.
// (A fault inside Metal or an uncaught Objective-C exception still ends the
// process: neither can be recovered from Go.)
func (g *gpuThread) invoke(fn func() error) (err error) {
	pool := g.rt.poolPush()
	defer g.rt.poolPop(pool)
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("metal backend: panic on the GPU thread: %v\n%s", p, debug.Stack())
		}
	}()
	return fn()
}

// do runs fn on the GPU thread and returns its error.
func (g *gpuThread) do(fn func() error) error {
	if g.rt.pthreadSelf() == g.tid.Load() {
		return errReentrant
	}
	g.mu.RLock()
	if g.closed {
		g.mu.RUnlock()
		return errClosed
	}
	done := make(chan error, 1)
	select {
	case g.reqs <- gpuRequest{fn: fn, done: done}:
	case <-g.exited:
		g.mu.RUnlock()
		return errClosed
	}
	g.mu.RUnlock()
	return <-done
}

// stop ends the GPU thread after the running closure; later calls return errClosed.
func (g *gpuThread) stop() {
	g.mu.Lock()
	if !g.closed {
		g.closed = true
		close(g.reqs)
	}
	g.mu.Unlock()
	<-g.exited
}
