package kernels

import (
	"fmt"
	"math"
)

// GuardLen is the number of canary elements on each side of a Guarded buffer.
const GuardLen = 64

// Guarded is a buffer with canary regions before and after it: a kernel
// that writes past the end of its output (through the slice's spare
// capacity, or on a device through a bad index) changes a canary, which
// Check reports, where a bounds-checked write would have gone unnoticed.
type Guarded[T float32 | uint16] struct {
	buf []T
	n   int
}

// canary bit patterns: NaNs with a payload no arithmetic produces.
const (
	canary32 = 0x7fa5a5a5
	canary16 = 0x7da5
)

// NewGuarded allocates n elements with canaries on both sides.
func NewGuarded[T float32 | uint16](n int) *Guarded[T] {
	g := &Guarded[T]{buf: make([]T, n+2*GuardLen), n: n}
	g.Arm()
	return g
}

// Data is the buffer; its capacity runs into the trailing canary region, so
// a kernel that reslices past its length writes into the canaries.
func (g *Guarded[T]) Data() []T { return g.buf[GuardLen : GuardLen+g.n] }

func canaryOf[T float32 | uint16]() T {
	var z T
	switch any(z).(type) {
	case float32:
		return T(math.Float32frombits(canary32))
	}
	return T(canary16)
}

func isCanary[T float32 | uint16](v T) bool {
	switch x := any(v).(type) {
	case float32:
		return math.Float32bits(x) == canary32
	case uint16:
		return x == canary16
	}
	return false
}

// Arm writes the canaries.
func (g *Guarded[T]) Arm() {
	c := canaryOf[T]()
	for i := 0; i < GuardLen; i++ {
		g.buf[i] = c
		g.buf[GuardLen+g.n+i] = c
	}
}

// Check reports a changed canary: a write before or past the end.
func (g *Guarded[T]) Check() error {
	for i := 0; i < GuardLen; i++ {
		if !isCanary(g.buf[GuardLen+g.n+i]) {
			return fmt.Errorf("wrote past the end of the output: element %d after its last (of %d) was changed", i, g.n)
		}
		if !isCanary(g.buf[GuardLen-1-i]) {
			return fmt.Errorf("wrote before the start of the output: element %d before its first was changed", i+1)
		}
	}
	return nil
}
