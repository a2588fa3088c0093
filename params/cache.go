package params

import (
	"maps"
	"slices"
	"sync"
	"sync/atomic"
)

// ResolveCacheSize is how many results per family a Loader keeps: a shape
// resolved again, with the same values of the variables Resolve reads, is
// answered from the cache (see BenchmarkResolve, BenchmarkLaunch and
// BenchmarkResolveFirst): Launch returns the cached result itself, which
// cannot be changed, Resolve a copy. When a family's cache is
// full it is emptied and fills again, so a loader holds at most this many
// results per family (under 1 KB each), whatever shapes an application
// sees.
const ResolveCacheSize = 1024

// envValue is what the lookup returned for one variable.
type envValue struct {
	v  string
	ok bool
}

// resolveCache holds a family's results by "<dtype>/<shape>"; each is valid
// while the variables hold the values it was resolved with.
//
// Applications resolve from many goroutines at once, nearly always shapes
// seen before, so reads take no lock: read is an immutable map replaced as
// a whole. New results go to dirty, under mu, and are moved into a new read
// map once dirty holds half as many as read (at least 8), so that each
// result is copied a bounded number of times on average.
type resolveCache struct {
	read  atomic.Pointer[map[string]*cachedResult]
	mu    sync.Mutex
	dirty map[string]*cachedResult
}

type cachedResult struct {
	x   *Launch
	env []envValue
}

// get returns the result for key, or nil when there is none or env
// differs from the values it was resolved with.
func (c *resolveCache) get(key []byte, env []envValue) *Launch {
	var e *cachedResult
	if m := c.read.Load(); m != nil {
		e = (*m)[string(key)]
	}
	if e == nil {
		c.mu.Lock()
		e = c.dirty[string(key)]
		c.mu.Unlock()
	}
	if e == nil || !slices.Equal(e.env, env) {
		return nil
	}
	return e.x
}

// put keeps a copy of r for key, resolved with env, and returns it.
func (c *resolveCache) put(key string, env []envValue, r *Resolved) *Launch {
	x := &Launch{r: *r.clone()}
	e := &cachedResult{x: x, env: slices.Clone(env)}
	c.mu.Lock()
	defer c.mu.Unlock()
	var read map[string]*cachedResult
	if m := c.read.Load(); m != nil {
		read = *m
	}
	if len(read)+len(c.dirty) >= ResolveCacheSize {
		c.read.Store(nil)
		read, c.dirty = nil, nil
	}
	if _, ok := read[key]; ok {
		// Resolved again with other variables: replace it in a new read map.
		m := maps.Clone(read)
		m[key] = e
		c.read.Store(&m)
		return x
	}
	if c.dirty == nil {
		c.dirty = map[string]*cachedResult{}
	}
	c.dirty[key] = e
	if len(c.dirty) >= max(8, len(read)/2) {
		m := make(map[string]*cachedResult, len(read)+len(c.dirty))
		maps.Copy(m, read)
		maps.Copy(m, c.dirty)
		c.read.Store(&m)
		c.dirty = nil
	}
	return x
}

// Launch is a resolved parameter set that cannot be changed, so that the
// loader shares it between callers (see Loader.Launch). Its methods answer
// what Resolved's fields do; Resolved returns a copy with every field.
type Launch struct {
	r Resolved // never handed out: Resolved returns copies
}

// Int returns the value of the named parameter, or 0 if the family has no
// such parameter.
func (x *Launch) Int(name string) int { return x.r.Params[name].Value }

// Value returns the named parameter's value and source, and whether the
// family has it.
func (x *Launch) Value(name string) (Value, bool) {
	v, ok := x.r.Params[name]
	return v, ok
}

// UseBaseline and Baseline are Resolved.UseBaseline and Resolved.Baseline:
// call the baseline (named by Baseline) instead of the tuned kernel.
func (x *Launch) UseBaseline() bool { return x.r.UseBaseline }
func (x *Launch) Baseline() string  { return x.r.Baseline }

// Names returns the parameter names in the order the family's space lists them.
func (x *Launch) Names() []string { return slices.Clone(x.r.names) }

// Resolved returns the result as Resolve does: a copy the caller may change.
func (x *Launch) Resolved() *Resolved { return x.r.clone() }

// resolvedBox holds a Resolved and the dims of its Shape in one allocation.
type resolvedBox struct {
	r    Resolved
	dims [4]int
}

// clone returns a copy of r that shares nothing a caller can change: its
// own Params map and Shape slice (names is never modified).
func (r *Resolved) clone() *Resolved {
	var c *Resolved
	if n := len(r.Shape); n <= len(resolvedBox{}.dims) {
		b := &resolvedBox{r: *r}
		copy(b.dims[:], r.Shape)
		c = &b.r
		c.Shape = b.dims[:n:n]
	} else {
		c = new(Resolved)
		*c = *r
		c.Shape = slices.Clone(r.Shape)
	}
	c.Params = maps.Clone(r.Params)
	return c
}
