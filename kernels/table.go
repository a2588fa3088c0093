package kernels

import (
	"fmt"
	"sort"

	"github.com/kerntune/kerntune/params/families"
)

// Table holds one implementation per built-in family for a layer above the
// catalog (a backend's kernel functions, a vendor library's baselines). Each
// family adds its own from the init of its file in that layer, so the
// layer's code has no case per family.
type Table[T any] struct {
	what string
	m    map[string]T
}

// NewTable makes an empty table; what names its contents in panics.
func NewTable[T any](what string) *Table[T] {
	return &Table[T]{what: what, m: map[string]T{}}
}

// Add registers the implementation of family. A name that is not a
// built-in family (misspelt, it would never be found) or one added twice
// is a programming error: Add panics, so every test and run fails at once.
func (t *Table[T]) Add(family string, v T) {
	if _, ok := families.Builtin()[family]; !ok {
		panic(fmt.Sprintf("kernels: %s for %q, which is not a built-in family", t.what, family))
	}
	if _, dup := t.m[family]; dup {
		panic(fmt.Sprintf("kernels: %s for %q added twice", t.what, family))
	}
	t.m[family] = v
}

// Get returns the implementation of family, if it has one.
func (t *Table[T]) Get(family string) (T, bool) {
	v, ok := t.m[family]
	return v, ok
}

// Families lists the families with an implementation, sorted.
func (t *Table[T]) Families() []string {
	names := make([]string, 0, len(t.m))
	for n := range t.m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
