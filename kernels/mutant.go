package kernels

import (
	"fmt"
	"math"

	"github.com/kerntune/kerntune/params/families"
)

// Mutant is a family's naive implementation with one mutation applied
// ("" for none): the mutation tests run it as a broken candidate would run
// and check that verification catches every kind of mutation the family's
// description lists. It reads like a device: an index past a slice's
// length reaches into its capacity (ReadPast), and writes past the end are
// the test's to make.
type Mutant func(p *Problem, in [][]float32, out []float32, mutation string)

// mutants holds the mutants of the families that live in their own folder
// (family/NAME), registered from their init; the layered families keep
// theirs in the tuner's mutation test.
var mutants = map[string]Mutant{}

// AddMutant registers a family's mutant. A name that is not a built-in
// family, or one added twice, is a programming error: it panics.
func AddMutant(family string, m Mutant) {
	if _, ok := families.Builtin()[family]; !ok {
		panic(fmt.Sprintf("kernels: mutant for %q, which is not a built-in family", family))
	}
	if _, dup := mutants[family]; dup {
		panic(fmt.Sprintf("kernels: mutant for %q added twice", family))
	}
	mutants[family] = m
}

// MutantOf returns the registered mutant of a family.
func MutantOf(family string) (Mutant, bool) {
	m, ok := mutants[family]
	return m, ok
}

// ReadPast reads s[i] as a device would: past the slice's length into its
// capacity (the slack a test allocates), and NaN outside the allocation.
func ReadPast(s []float32, i int) float32 {
	s = s[:cap(s)]
	if i < 0 || i >= len(s) {
		return float32(math.NaN())
	}
	return s[i]
}
