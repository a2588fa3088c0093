package cpu

import (
	"math/rand/v2"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
)

// Every candidate of lora's CPU space, in every dtype, matches the float64
// reference on the family's odd shapes (row blocks and chunks with tails,
// each rank, with and without bias).
func TestLoraEveryCandidate(t *testing.T) {
	k := testutil.Lookup(t, kernels.Get, "lora")
	b := &Backend{}
	sp, _ := k.Space("cpu")
	var params []search.Param
	for _, p := range sp.Params {
		params = append(params, search.Param{Name: p.Name, Values: p.Values})
	}
	cands := (&search.Space{Params: params}).Enumerate()
	rng := rand.New(rand.NewPCG(31, 4))
	for _, dt := range kernels.DTypes {
		for _, c := range k.Odd {
			p, err := kernels.NewProblem(k, dt, c, rng)
			if err != nil {
				t.Fatal(err)
			}
			inst, err := b.Load(p, 1)
			if err != nil {
				t.Fatal(err)
			}
			for _, cand := range cands {
				prog, err := b.Build(k, dt, cand)
				if err != nil {
					t.Fatal(err)
				}
				verifyOutput(t, prog, inst, p, string(dt)+" "+c.String()+" "+cand.Key())
			}
		}
	}
}
