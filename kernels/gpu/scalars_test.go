package gpu

import (
	"fmt"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/kernels"
)

// Every scalar a family declares reaches its body's arguments: without it
// the arguments change (a declared scalar no kernel reads is a mistake, and
// so is a body that ignores the value the family gives).
func TestBodiesReadDeclaredScalars(t *testing.T) {
	for _, k := range kernels.All() {
		b := testutil.Lookup(t, Get, k.Name)
		c := k.Odd[0]
		with := fmt.Sprint(b.Scalars(c, k.Scalars))
		for name := range k.Scalars {
			without := map[string]float64{}
			for n, v := range k.Scalars {
				if n != name {
					without[n] = v
				}
			}
			if got := fmt.Sprint(b.Scalars(c, without)); got == with {
				t.Errorf("%s: the body's arguments %s do not depend on its scalar %q", k.Name, with, name)
			}
		}
	}
}
