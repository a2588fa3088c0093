package all_test

import (
	"context"
	"testing"

	"github.com/kerntune/kerntune/family"
	_ "github.com/kerntune/kerntune/family/all"
	"github.com/kerntune/kerntune/internal/mslcheck"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/params/families"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner"
	"github.com/kerntune/kerntune/tuner/cpu"
)

// folders lists the families that live in their own folder; at least the
// example.
func folders(t *testing.T) []*kernels.Kernel {
	t.Helper()
	var ks []*kernels.Kernel
	for _, name := range families.BuiltinNames() {
		f := families.Builtin()[name]
		if f.Folder == "" {
			continue
		}
		k, err := kernels.Get(name)
		if err != nil {
			t.Fatalf("%s (%s): no catalog entry: %v (is its folder imported in family/all?)", name, f.Folder, err)
		}
		ks = append(ks, k)
	}
	if len(ks) == 0 {
		t.Fatal("no family in a folder; the example, family/twice, is one")
	}
	return ks
}

// gpuCandidates enumerates a family's GPU space without shape constraints;
// false when it has none.
func gpuCandidates(k *kernels.Kernel) ([]search.Candidate, bool) {
	ps, ok := k.Space("gpu")
	if !ok {
		return nil, false
	}
	var params []search.Param
	for _, p := range ps.Params {
		params = append(params, search.Param{Name: p.Name, Values: p.Values})
	}
	return (&search.Space{Params: params}).Enumerate(), true
}

// Every folder family registered every part from its own folder: a
// catalog entry, a GPU body when it has a GPU space, a mutant, and its
// description is where package family embeds it.
func TestFolderFamiliesComplete(t *testing.T) {
	for _, k := range folders(t) {
		_, hasGPU := k.Space("gpu")
		if _, err := gpu.Get(k.Name); (err == nil) != hasGPU {
			t.Errorf("%s: GPU space %v, body error %v", k.Name, hasGPU, err)
		}
		if _, ok := kernels.MutantOf(k.Name); !ok {
			t.Errorf("%s: no mutant (kernels.AddMutant)", k.Name)
		}
		if _, err := family.Descriptions.ReadFile(k.Name + "/" + k.Name + ".json"); err != nil {
			t.Errorf("%s: description: %v", k.Name, err)
		}
		if !k.Example && len(k.Workload) == 0 {
			t.Errorf("%s: no default workload", k.Name)
		}
	}
}

// Every CPU candidate of a folder family passes verification on its odd
// shapes, on fresh random inputs with the output poisoned.
func TestFolderFamiliesVerifyOnCPU(t *testing.T) {
	b, err := cpu.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	tu := tuner.New(b, tuner.Config{Seed: 1})
	for _, k := range folders(t) {
		if _, ok := k.Space("cpu"); !ok {
			continue
		}
		rep, err := tu.VerifyAll(context.Background(), k, kernels.F32, 1)
		if err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
		if rep.Checked == 0 || rep.Passed != rep.Checked {
			t.Errorf("%s f32 on the CPU: %d of %d checked passed: %v", k.Name, rep.Passed, rep.Checked, rep.Failed)
		}
	}
}

// Every GPU candidate of a folder family generates its source for every
// API from the one body, with a launch that covers the largest workload
// shape.
func TestFolderFamiliesGenerate(t *testing.T) {
	for _, k := range folders(t) {
		cands, ok := gpuCandidates(k)
		if !ok {
			continue
		}
		if len(cands) == 0 {
			t.Fatalf("%s: no GPU candidate", k.Name)
		}
		for _, c := range cands {
			for _, api := range gpu.APIs {
				for _, dt := range kernels.DTypes {
					if _, _, err := gpu.Source(k.Name, api, dt, c); err != nil {
						t.Fatalf("%s %s %s %s: %v", k.Name, c.Key(), api, dt, err)
					}
				}
			}
		}
	}
}

// Every Metal source of a folder family passes the MSL checks off a Mac
// (clang against a stand-in <metal_stdlib>, and as C++ for OpenCL).
func TestFolderFamiliesMSL(t *testing.T) {
	cc := mslcheck.Require(t)
	var srcs []gpu.MSLSource
	for _, k := range folders(t) {
		cands, ok := gpuCandidates(k)
		if !ok {
			continue
		}
		for _, c := range cands {
			for _, dt := range kernels.DTypes {
				b, src, err := gpu.Source(k.Name, gpu.Metal, dt, c)
				if err != nil {
					t.Fatal(err)
				}
				srcs = append(srcs, gpu.MSLSource{Name: k.Name + " " + c.Key() + " " + string(dt), Func: b.FuncName(dt, c), Text: src})
			}
		}
	}
	if _, err := gpu.CheckMSL(context.Background(), cc, srcs); err != nil {
		t.Fatal(err)
	}
}
