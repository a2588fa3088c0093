package spec

import (
	"context"
	"testing"
)

// The static check generates a source for every valid candidate, dtype
// and API, and counts the candidates valid on each class's shapes.
func TestStaticCheckCounts(t *testing.T) {
	c, err := Load("../examples/swiglu.json")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := c.StaticCheck(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := sc.Valid * sc.DTypes * len(sc.APIs); sc.Sources != want || want == 0 {
		t.Errorf("sources %d, want %d valid × %d dtypes × %d APIs", sc.Sources, sc.Valid, sc.DTypes, len(sc.APIs))
	}
	if len(sc.Classes) == 0 || len(sc.Params) == 0 || sc.SpaceSize < sc.Valid {
		t.Errorf("static check %+v", sc)
	}
	for _, cl := range sc.Classes {
		if cl.Valid == 0 || cl.Valid > sc.SpaceSize || len(cl.Shapes) == 0 {
			t.Errorf("class %+v", cl)
		}
	}
}
