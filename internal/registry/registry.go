package registry

import (
	"fmt"
	"sync"
)

// Map is a set of user-defined entries by name, safe for concurrent use;
// the zero value is empty and ready.
type Map[T any] struct {
	mu sync.RWMutex
	m  map[string]T
}

// Add adds v under name, refusing the name of a built-in family (builtin
// true); the same name again replaces the entry.
func (r *Map[T]) Add(name string, builtin bool, v T) error {
	if builtin {
		return fmt.Errorf("kernel name %q is a built-in family; choose another name", name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]T{}
	}
	r.m[name] = v
	return nil
}

// Get returns the entry of name.
func (r *Map[T]) Get(name string) (T, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	v, ok := r.m[name]
	return v, ok
}

// Names lists the names of the entries, in no order.
func (r *Map[T]) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.m))
	for n := range r.m {
		names = append(names, n)
	}
	return names
}
