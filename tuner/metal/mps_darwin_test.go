//go:build darwin

package metal

import (
	"testing"

	"github.com/kerntune/kerntune/params"
)

// Every family with an MPS routine is a built-in family: a misspelt name
// would leave the family without its baseline.
func TestMPSFamiliesAreBuiltin(t *testing.T) {
	if len(mpsEncoders) == 0 {
		t.Fatal("no family registered an MPS routine")
	}
	for name := range mpsEncoders {
		if _, ok := params.Builtin()[name]; !ok {
			t.Errorf("MPS baseline registered for %q, which is not a built-in family", name)
		}
	}
}
