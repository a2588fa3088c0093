package cpu

import (
	"testing"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params/families"
)

// Every built-in family with a CPU space has a CPU implementation (the
// table refuses a name that is not a built-in family). A family in its own
// folder registers its own when imported: family/all's test checks those.
func TestFamiliesRegistered(t *testing.T) {
	for name, f := range families.Builtin() {
		if _, ok := f.Space("cpu"); !ok || f.Folder != "" {
			continue
		}
		if _, ok := impls.Get(name); !ok {
			t.Errorf("built-in family %s has no CPU implementation", name)
		}
	}
}

// Baseline gives gonum's routine for f32 where the family registered one,
// and nothing for f16 or for a kernel the backend does not know.
func TestBaselineByFamily(t *testing.T) {
	b := &Backend{}
	for _, k := range kernels.All() {
		for _, dt := range kernels.DTypes {
			prog, name, err := b.Baseline(k, dt)
			if err != nil {
				t.Fatal(err)
			}
			f, _ := impls.Get(k.Name)
			want := dt == kernels.F32 && f.baseline != nil
			if (prog != nil) != want || (name == "gonum") != want {
				t.Errorf("%s %s: baseline %v named %q, want one: %v", k.Name, dt, prog, name, want)
			}
		}
	}
	user := &kernels.Kernel{Family: &families.Family{Name: "user_kernel"}}
	if prog, _, _ := b.Baseline(user, kernels.F32); prog != nil {
		t.Error("a kernel without a CPU family got a baseline")
	}
	if _, err := b.Build(user, kernels.F32, nil); err == nil {
		t.Error("a kernel without a CPU family was built")
	}
}
