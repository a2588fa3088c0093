package compilepool

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var errClosed = errors.New("closed")

// Every key compiles exactly once however many goroutines ask for it.
func TestCompilesOncePerKey(t *testing.T) {
	p := New[int](4, errClosed)
	defer p.Close()
	var calls [8]atomic.Int32
	job := func(i int) *Job[int] {
		return p.Job(fmt.Sprint(i), func() (int, error) { calls[i].Add(1); return i * i, nil })
	}
	var all []*Job[int]
	for i := range calls {
		all = append(all, job(i))
	}
	p.Enqueue(all...)
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				v, err := job(i).Wait()
				if err != nil || v != i*i {
					t.Errorf("key %d: got %d, %v; want %d", i, v, err, i*i)
				}
			}
		}()
	}
	wg.Wait()
	for i := range calls {
		if n := calls[i].Load(); n != 1 {
			t.Errorf("key %d compiled %d times, want 1", i, n)
		}
	}
}

// One worker compiles announced jobs in the order they were announced.
func TestFIFOOrder(t *testing.T) {
	p := New[int](1, errClosed)
	defer p.Close()
	var mu sync.Mutex
	var order []int
	var jobs []*Job[int]
	for i := 0; i < 20; i++ {
		jobs = append(jobs, p.Job(fmt.Sprint(i), func() (int, error) {
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			return i, nil
		}))
	}
	p.Enqueue(jobs...)
	if _, err := jobs[len(jobs)-1].Result(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, v := range order {
		if v != i {
			t.Fatalf("compile order %v, want 0..19", order)
		}
	}
}

func TestCloseAndEvict(t *testing.T) {
	tests := []struct {
		name string
		do   func(t *testing.T, p *Pool[int], calls *atomic.Int32)
	}{
		{"evicted key compiles again", func(t *testing.T, p *Pool[int], calls *atomic.Int32) {
			f := func() (int, error) { return int(calls.Add(1)), nil }
			if v, _ := p.Job("a", f).Wait(); v != 1 {
				t.Fatalf("first compile gave %d", v)
			}
			if v, _ := p.Job("a", f).Wait(); v != 1 {
				t.Fatalf("cached job gave %d, want the first result 1", v)
			}
			if _, ok := p.Evict("a"); !ok {
				t.Fatal("Evict found no job for a")
			}
			if v, _ := p.Job("a", f).Wait(); v != 2 {
				t.Fatalf("after Evict got %d, want a second compile (2)", v)
			}
		}},
		{"close ends jobs not started with the closed error", func(t *testing.T, p *Pool[int], calls *atomic.Int32) {
			j := p.Job("x", func() (int, error) { calls.Add(1); return 1, nil })
			jobs := p.Close()
			if len(jobs) != 1 {
				t.Fatalf("Close returned %d jobs, want 1", len(jobs))
			}
			if _, err := j.Result(); !errors.Is(err, errClosed) {
				t.Fatalf("job not started: err %v, want the closed error", err)
			}
			if calls.Load() != 0 {
				t.Fatal("a job compiled after Close")
			}
			if _, err := p.Job("y", func() (int, error) { return 1, nil }).Wait(); !errors.Is(err, errClosed) {
				t.Fatalf("job made after Close: err %v, want the closed error", err)
			}
			p.Enqueue(p.Job("z", func() (int, error) { return 1, nil })) // must not panic on the closed queue
			if p.Close() != nil {
				t.Fatal("second Close returned jobs")
			}
		}},
		{"close waits for a compile in flight", func(t *testing.T, p *Pool[int], calls *atomic.Int32) {
			started, release := make(chan struct{}), make(chan struct{})
			j := p.Job("slow", func() (int, error) { close(started); <-release; calls.Add(1); return 7, nil })
			p.Enqueue(j)
			<-started
			go close(release)
			p.Close()
			if v, err := j.Result(); v != 7 || err != nil || calls.Load() != 1 {
				t.Fatalf("in-flight job: %d, %v after Close; want 7, nil", v, err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := New[int](2, errClosed)
			defer p.Close()
			var calls atomic.Int32
			tc.do(t, p, &calls)
		})
	}
}

// A newer announcement is compiled before what is left of older ones, in
// its own order; a job announced again is compiled once, where it comes
// first.
func TestNewestAnnouncementFirst(t *testing.T) {
	p := New[int](1, errClosed)
	defer p.Close()
	var mu sync.Mutex
	var order []int
	started, release := make(chan struct{}), make(chan struct{})
	job := func(i int) *Job[int] {
		return p.Job(fmt.Sprint(i), func() (int, error) {
			if i == 0 {
				close(started)
				<-release
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			return i, nil
		})
	}
	p.Enqueue(job(0), job(1), job(2), job(3))
	<-started // the worker holds job 0; 1, 2, 3 wait
	p.Enqueue(job(10), job(2), job(11))
	close(release)
	if _, err := job(3).Result(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []int{0, 10, 2, 11, 1, 3}; fmt.Sprint(order) != fmt.Sprint(want) {
		t.Fatalf("compile order %v, want %v", order, want)
	}
}

// Done is false until the job has ended, whatever way it ends, and never
// blocks; Lookup finds cached jobs without creating any.
func TestJobDone(t *testing.T) {
	p := New[int](1, errClosed)
	release := make(chan struct{})
	started := make(chan struct{})
	slow := p.Job("slow", func() (int, error) { close(started); <-release; return 1, nil })
	failing := p.Job("failing", func() (int, error) { return 0, errors.New("does not compile") })
	idle := p.Job("idle", func() (int, error) { return 2, nil })
	tests := []struct {
		name string
		job  *Job[int]
		end  func()
	}{
		{"compiles", slow, func() { close(release); slow.Wait() }},
		{"fails", failing, func() { failing.Wait() }},
		{"closed before it started", idle, func() { p.Close() }},
	}
	p.Enqueue(slow)
	<-started
	for _, tc := range tests {
		if tc.job.Done() {
			t.Errorf("%s: done before it ended", tc.name)
		}
		if j, ok := p.Lookup(tc.job.Key); !ok || j != tc.job {
			t.Errorf("%s: Lookup %v %v", tc.name, j, ok)
		}
		tc.end()
		if !tc.job.Done() {
			t.Errorf("%s: not done after it ended", tc.name)
		}
	}
	if _, ok := p.Lookup("never"); ok {
		t.Error("Lookup found a job never made")
	}
}

// Spares are compiled only when no announced job waits, in their order,
// and a later Spare replaces the earlier list.
func TestSparesAfterAnnounced(t *testing.T) {
	p := New[int](1, errClosed)
	defer p.Close()
	var mu sync.Mutex
	var order []string
	gate := make(chan struct{})
	job := func(key string, wait bool) *Job[int] {
		return p.Job(key, func() (int, error) {
			if wait {
				<-gate
			}
			mu.Lock()
			order = append(order, key)
			mu.Unlock()
			return 0, nil
		})
	}
	a := job("a", true)
	p.Enqueue(a)
	for !a.claimed.Load() {
		runtime.Gosched()
	}
	p.Spare(job("s1", false), job("s2", false))
	p.Spare(job("s3", false), job("s4", false)) // replaces s1, s2
	p.Enqueue(job("b", false))
	close(gate)
	s4, _ := p.Lookup("s4")
	<-s4.done // the worker compiles it last
	mu.Lock()
	got := fmt.Sprint(order)
	mu.Unlock()
	if got != "[a b s3 s4]" {
		t.Errorf("compile order %s, want [a b s3 s4] (s1, s2 dropped)", got)
	}
	if j, ok := p.Lookup("s1"); ok && j.claimed.Load() {
		t.Error("s1 was compiled after Spare replaced it")
	}
}

// At most half the workers compile spares at once, so an announced job
// finds a worker free.
func TestSparesLeaveWorkers(t *testing.T) {
	p := New[int](4, errClosed)
	defer p.Close()
	gate := make(chan struct{})
	var running, most atomic.Int32
	var spares []*Job[int]
	for i := range 6 {
		spares = append(spares, p.Job(fmt.Sprint("s", i), func() (int, error) {
			n := running.Add(1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			<-gate
			running.Add(-1)
			return 0, nil
		}))
	}
	p.Spare(spares...)
	for running.Load() < 2 {
		runtime.Gosched()
	}
	x := p.Job("x", func() (int, error) { return 7, nil })
	p.Enqueue(x)
	<-x.done // a free worker, not Wait, compiled it
	if v, err := x.Wait(); v != 7 || err != nil {
		t.Errorf("announced job: %d, %v", v, err)
	}
	close(gate)
	for _, j := range spares {
		if _, err := j.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	if m := most.Load(); m != 2 {
		t.Errorf("%d spares compiled at once by 4 workers, want 2", m)
	}
}

// No spare starts while half the workers compile announced jobs.
func TestSparesWaitForAHalfIdlePool(t *testing.T) {
	p := New[int](4, errClosed)
	defer p.Close()
	gate := make(chan struct{})
	var started atomic.Int32
	var busy []*Job[int]
	for i := range 2 {
		busy = append(busy, p.Job(fmt.Sprint("a", i), func() (int, error) { started.Add(1); <-gate; return 0, nil }))
	}
	p.Enqueue(busy...)
	for started.Load() < 2 {
		runtime.Gosched()
	}
	var spared atomic.Bool
	s := p.Job("s", func() (int, error) { spared.Store(true); return 0, nil })
	p.Spare(s)
	time.Sleep(20 * time.Millisecond) // time for a worker to (wrongly) take it
	if spared.Load() {
		t.Fatal("a spare started while 2 of 4 workers compiled announced jobs")
	}
	close(gate)
	<-s.done // once they end, a worker takes it
}
