package osthread

import (
	"errors"
	"runtime"
	"sync"
	"testing"
)

var (
	errClosed    = errors.New("closed")
	errReentrant = errors.New("reentrant")
	errGoexit    = errors.New("goexit")
)

func start(t *testing.T, setup func() error) (*Thread, error) {
	t.Helper()
	return Start(Config{Setup: setup, Closed: errClosed, Reentrant: errReentrant, Goexit: errGoexit})
}

// Every closure runs on the one thread Setup ran on, one at a time, in
// the order each caller's calls were made.
func TestDoRunsOnOneThreadSerialized(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("thread ids are known on Linux only")
	}
	var setupID uintptr
	th, err := start(t, func() error { setupID = ID(); return nil })
	if err != nil {
		t.Fatal(err)
	}
	defer th.Stop(nil)
	var wg sync.WaitGroup
	running, most := 0, 0 // touched only on the thread
	ids := make(chan uintptr, 400)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if err := th.Do(func() error {
					running++
					most = max(most, running)
					ids <- ID()
					runtime.Gosched()
					running--
					return nil
				}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	close(ids)
	for id := range ids {
		if id != setupID {
			t.Fatalf("a closure ran on thread %d, Setup on %d", id, setupID)
		}
	}
	if err := th.Do(func() error { return nil }); err != nil || most != 1 {
		t.Errorf("at most %d closures ran at once (err %v), want 1", most, err)
	}
}

func TestThreadErrors(t *testing.T) {
	errSetup, errFinal := errors.New("setup failed"), errors.New("final failed")
	tests := []struct {
		name string
		run  func(t *testing.T) error
		want error
	}{
		{"Setup's error is Start's", func(t *testing.T) error {
			_, err := start(t, func() error { return errSetup })
			return err
		}, errSetup},
		{"Do returns the closure's error", func(t *testing.T) error {
			th, _ := start(t, nil)
			defer th.Stop(nil)
			return th.Do(func() error { return errFinal })
		}, errFinal},
		{"Do on the thread is refused", func(t *testing.T) error {
			if runtime.GOOS != "linux" {
				t.Skip("thread ids are known on Linux only")
			}
			th, _ := start(t, nil)
			defer th.Stop(nil)
			var inner error
			if err := th.Do(func() error { inner = th.Do(func() error { return nil }); return nil }); err != nil {
				return err
			}
			return inner
		}, errReentrant},
		{"a closure ending the goroutine is answered", func(t *testing.T) error {
			th, _ := start(t, nil)
			defer th.Stop(nil)
			return th.Do(func() error { runtime.Goexit(); return nil })
		}, errGoexit},
		{"Do after the goroutine ended", func(t *testing.T) error {
			th, _ := start(t, nil)
			defer th.Stop(nil)
			th.Do(func() error { runtime.Goexit(); return nil })
			return th.Do(func() error { return nil })
		}, errClosed},
		{"Stop returns final's error", func(t *testing.T) error {
			th, _ := start(t, nil)
			return th.Stop(func() error { return errFinal })
		}, errFinal},
		{"Stop after the goroutine ended skips final", func(t *testing.T) error {
			th, _ := start(t, nil)
			th.Do(func() error { runtime.Goexit(); return nil })
			return th.Stop(func() error { return errFinal })
		}, nil},
		{"a second Stop", func(t *testing.T) error {
			th, _ := start(t, nil)
			th.Stop(nil)
			return th.Stop(func() error { return errFinal })
		}, nil},
		{"Do after Stop", func(t *testing.T) error {
			th, _ := start(t, nil)
			th.Stop(nil)
			return th.Do(func() error { return nil })
		}, errClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.run(t); !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestStartNeedsItsErrors(t *testing.T) {
	if _, err := Start(Config{Closed: errClosed}); err == nil {
		t.Error("Start without Reentrant and Goexit errors succeeded")
	}
}
