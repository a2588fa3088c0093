package compilepool

import (
	"sync"
	"sync/atomic"
)

// queueLen bounds the announced-but-not-started jobs; beyond it Enqueue
// drops jobs, which Wait then compiles on the caller's goroutine.
const queueLen = 1 << 16

// Pool caches compile jobs by key and compiles announced jobs, newest
// announcement first, on a fixed number of goroutines, started on first use.
type Pool[V any] struct {
	workers   int
	closedErr error

	mu      sync.Mutex
	cond    *sync.Cond // signals new announcements and Close
	closed  bool
	started bool
	jobs    map[string]*Job[V]
	// gens are the announcements not yet drained, oldest first; each is
	// compiled in its own order.
	gens    [][]*Job[V]
	pending int
	// spares are jobs announced at low priority (Spare), in order: a
	// worker takes one only when no announced job waits and fewer than
	// spareMax workers are compiling anything, so that a batch announced
	// next finds half the workers free.
	spares []*Job[V]
	busy   int // workers compiling
}

// Job is one compile: not started, in flight or done.
type Job[V any] struct {
	Key     string
	pool    *Pool[V]
	compile func() (V, error)
	claimed atomic.Bool // a goroutine has begun (or finished) it
	once    sync.Once
	done    chan struct{}
	val     V
	err     error
}

// New makes a pool of workers goroutines (at least one). closedErr is the
// error of a job that had not started when the pool was closed.
func New[V any](workers int, closedErr error) *Pool[V] {
	p := &Pool[V]{workers: max(1, workers), closedErr: closedErr, jobs: map[string]*Job[V]{}}
	p.cond = sync.NewCond(&p.mu)
	return p
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

// Lookup returns the cached job of key, creating none.
func (p *Pool[V]) Lookup(key string) (*Job[V], bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	j, ok := p.jobs[key]
	return j, ok
}

// Enqueue announces jobs, to be compiled in this order before any job
// announced earlier and not yet started; the workers start on first use. A
// job beyond queueLen pending ones is dropped: Wait compiles it when it is
// needed.
func (p *Pool[V]) Enqueue(jobs ...*Job[V]) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.start()
	gen := make([]*Job[V], 0, len(jobs))
	for _, j := range jobs {
		if p.pending >= queueLen {
			break
		}
		if !j.claimed.Load() {
			gen = append(gen, j)
			p.pending++
		}
	}
	if len(gen) > 0 {
		p.gens = append(p.gens, gen)
		p.cond.Broadcast()
	}
}

// Spare replaces the low-priority announcements with jobs, to be
// compiled in this order when the pool has nothing announced to do and
// fewer than half its workers are compiling (Spare() drops them): builds
// that are worth having only if they cost the announced ones nothing. A
// spare of a few seconds still holds its worker when a batch comes; half
// the pool is then free for it.
func (p *Pool[V]) Spare(jobs ...*Job[V]) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.spares = p.spares[:0]
	for _, j := range jobs {
		if !j.claimed.Load() {
			p.spares = append(p.spares, j)
		}
	}
	if len(p.spares) > 0 {
		p.start()
		p.cond.Broadcast()
	}
}

// start starts the workers on first use; p.mu is held.
func (p *Pool[V]) start() {
	if !p.started {
		p.started = true
		for range p.workers {
			go p.work()
		}
	}
}

// spareMax is how many workers may be compiling when one takes a spare.
func (p *Pool[V]) spareMax() int { return max(1, p.workers/2) }

// work compiles announced jobs, and spares when none waits, until the
// pool is closed.
func (p *Pool[V]) work() {
	for {
		p.mu.Lock()
		var j *Job[V]
		for j == nil {
			if p.closed {
				p.mu.Unlock()
				return
			}
			switch {
			case len(p.gens) > 0:
				last := len(p.gens) - 1
				j, p.gens[last] = p.gens[last][0], p.gens[last][1:]
				if len(p.gens[last]) == 0 {
					p.gens = p.gens[:last]
				}
				p.pending--
			case len(p.spares) > 0 && p.busy < p.spareMax():
				j, p.spares = p.spares[0], p.spares[1:]
			default:
				p.cond.Wait()
				continue
			}
			if j.claimed.Load() {
				j = nil // announced again, or taken by Wait
			}
		}
		p.busy++
		p.mu.Unlock()
		j.run()
		p.mu.Lock()
		p.busy--
		if len(p.spares) > 0 {
			p.cond.Broadcast() // a waiting worker may take a spare now
		}
		p.mu.Unlock()
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
	p.gens, p.pending, p.spares = nil, 0, nil
	p.cond.Broadcast() // the workers stop; jobs not started end below with the closed error
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
	j.claimed.Store(true)
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

// Done reports, without waiting, whether the job has ended (compiled,
// failed, or ended by Close).
func (j *Job[V]) Done() bool {
	select {
	case <-j.done:
		return true
	default:
		return false
	}
}

// Result returns the result of a job that has ended (after Wait or Close).
func (j *Job[V]) Result() (V, error) {
	<-j.done
	return j.val, j.err
}
