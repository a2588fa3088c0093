package cuda

import (
	"testing"

	"github.com/kerntune/kerntune/params"
)

// Every family with a cuBLAS routine is a built-in family: a misspelt name
// would leave the family without its baseline.
func TestBLASFamiliesAreBuiltin(t *testing.T) {
	if len(blasCalls) == 0 {
		t.Fatal("no family registered a cuBLAS routine")
	}
	for name := range blasCalls {
		if _, ok := params.Builtin()[name]; !ok {
			t.Errorf("cuBLAS baseline registered for %q, which is not a built-in family", name)
		}
	}
}
