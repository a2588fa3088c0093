// Package compilepool is the compile cache and FIFO compile pool shared by
// the GPU backends. The tuner announces the candidates it will build
// (Prefetch); a pool of goroutines compiles them in that order while the
// device times others, and Build waits for a candidate's compile, or runs it
// on its own goroutine when the pool has not reached it yet. Every compile
// runs once per key, whichever goroutine gets to it first.
package compilepool

import "sync"

// queueLen bounds the announced-but-not-started jobs; beyond it Enqueue
// drops jobs, which Wait then compiles on the caller's goroutine.
const queueLen = 1 << 16

// Pool caches compile jobs by key and compiles announced jobs in order on
// a fixed number of goroutines, started on first use.
type Pool[V any] struct {
	workers   int
	closedErr error

	mu     sync.Mutex
	closed bool
	jobs   map[string]*Job[V]
	queue  chan *Job[V]
	start  sync.Once
}

// Job is one compile: not started, in flight or done.
type Job[V any] struct {
	Key     string
	pool    *Pool[V]
	compile func() (V, error)
	once    sync.Once
	done    chan struct{}
	val     V
	err     error
}

// New makes a pool of workers goroutines (at least one). closedErr is the
// error of a job that had not started when the pool was closed.
func New[V any](workers int, closedErr error) *Pool[V] {
	return &Pool[V]{workers: max(1, workers), closedErr: closedErr, jobs: map[string]*Job[V]{}}
}

// Job returns the cached job of key, or creates one that will call compile.
// After Close the new job is not cached and ends with the closed error.
func (p *Pool[V]) Job(key string, compile func() (V, error)) *Job[V] {
	p.mu.Lock()
	defer p.mu.Unlock()
	if j, ok := p.jobs[key]; ok {
		return j
	}
	j := &Job[V]{Key: key, pool: p, compile: compile, done: make(chan struct{})}
	if !p.closed {
		p.jobs[key] = j
	}
	return j
}

// Enqueue hands jobs to the workers in order, starting them on first use.
// A full queue drops the job: Wait compiles it when it is needed.
func (p *Pool[V]) Enqueue(jobs ...*Job[V]) {
	p.start.Do(func() {
		q := make(chan *Job[V], queueLen)
		for range p.workers {
			go func() {
				for j := range q {
					j.run()
				}
			}()
		}
		p.mu.Lock()
		if p.closed {
			close(q)
		} else {
			p.queue = q
		}
		p.mu.Unlock()
	})
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, j := range jobs {
		if p.queue == nil {
			return
		}
		select {
		case p.queue <- j:
		default:
		}
	}
}

// Evict removes key from the cache and returns its job, so that the owner
// can free the job's value; a later Job(key) compiles again.
func (p *Pool[V]) Evict(key string) (*Job[V], bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	j, ok := p.jobs[key]
	if ok {
		delete(p.jobs, key)
	}
	return j, ok
}

// Forget removes j from the cache if it is still the job of its key, so
// that an owner that takes j's value out of the cache is its only user.
func (p *Pool[V]) Forget(j *Job[V]) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.jobs[j.Key] == j {
		delete(p.jobs, j.Key)
	}
}

// Close stops the workers and returns every cached job once it has ended:
// jobs not started end with the closed error; jobs in flight are waited for,
// so the owner may then free their values. It returns nil when called again.
func (p *Pool[V]) Close() []*Job[V] {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	if p.queue != nil {
		close(p.queue) // the workers drain it: queued jobs end with the closed error
		p.queue = nil
	}
	jobs := make([]*Job[V], 0, len(p.jobs))
	for _, j := range p.jobs {
		jobs = append(jobs, j)
	}
	p.jobs = map[string]*Job[V]{}
	p.mu.Unlock()
	for _, j := range jobs {
		j.run() // ends a job not started; waits for one in flight
	}
	return jobs
}

// run compiles the job once, on whichever goroutine gets to it first.
func (j *Job[V]) run() {
	j.once.Do(func() {
		defer close(j.done)
		j.pool.mu.Lock()
		closed := j.pool.closed
		j.pool.mu.Unlock()
		if closed {
			j.err = j.pool.closedErr
			return
		}
		j.val, j.err = j.compile()
	})
	<-j.done
}

// Wait returns the job's result, compiling it on this goroutine if no
// worker has started it.
func (j *Job[V]) Wait() (V, error) {
	j.run()
	return j.val, j.err
}

// Result returns the result of a job that has ended (after Wait or Close).
func (j *Job[V]) Result() (V, error) {
	<-j.done
	return j.val, j.err
}
