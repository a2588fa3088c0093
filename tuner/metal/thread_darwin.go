//go:build darwin

package metal

import (
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/kerntune/kerntune/internal/osthread"
)

var (
	errClosed    = errors.New("metal backend: closed")
	errReentrant = errors.New("metal backend: GPU-thread call made from the GPU thread")
)

// gpuThread is the goroutine that talks to the command queue, locked to
// one OS thread for its whole life (osthread, as the CUDA backend's
// context): command buffers and encoders are used from one thread, and
// each closure runs inside an autorelease pool pushed and popped on that
// thread. Calls from any goroutine are marshalled to it and serialized.
type gpuThread struct {
	rt *runtimeLib
	th *osthread.Thread
}

func startGPUThread(r *runtimeLib) (*gpuThread, error) {
	th, err := osthread.Start(osthread.Config{
		Self:      r.pthreadSelf,
		Closed:    errClosed,
		Reentrant: errReentrant,
		Goexit:    errors.New("metal backend: runtime.Goexit on the GPU thread; the backend is unusable"),
	})
	if err != nil {
		return nil, err
	}
	return &gpuThread{rt: r, th: th}, nil
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
	return g.th.Do(func() error { return g.invoke(fn) })
}

// stop ends the GPU thread after the running closure; later calls return errClosed.
func (g *gpuThread) stop() { g.th.Stop(nil) }
