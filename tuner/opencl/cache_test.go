package opencl

import (
	"os"
	"slices"
	"testing"

	"github.com/kerntune/kerntune/internal/compilecache"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
)

// TestMain keeps the package's tests out of the user's compile cache:
// they compile from source, as before the cache, unless a test turns it
// on (in a directory of its own) or KERNTUNE_NO_CACHE is set already.
func TestMain(m *testing.M) {
	if _, ok := os.LookupEnv(compilecache.EnvNoCache); !ok {
		os.Setenv(compilecache.EnvNoCache, "1")
	}
	os.Exit(m.Run())
}

// A second backend on the same cache builds a candidate it built before
// from the cached binary, compiling nothing, and the program computes the
// same output; with the cache off nothing is stored.
func TestCompileCacheAcrossBackends(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(compilecache.EnvDir, dir)
	t.Setenv(compilecache.EnvNoCache, "")
	k, err := kernels.Get("softmax")
	if err != nil {
		t.Fatal(err)
	}
	ps, ok := k.Space("opencl")
	if !ok {
		t.Fatal("softmax has no OpenCL space")
	}
	c := search.Candidate(ps.Defaults())
	run := func() ([]float32, compilecache.Stats) {
		t.Helper()
		b := openOrSkip(t)
		defer b.Close()
		out := buildAndRun(t, b, k, c)
		return out, b.CacheStats()
	}
	first, s1 := run()
	// The first backend compiles the copy kernel and the candidate.
	if s1.Hits != 0 || s1.Stores != 2 || s1.Rejected != 0 {
		t.Fatalf("first backend: %+v, want 0 hits and 2 stores", s1)
	}
	second, s2 := run()
	if s2.Hits != 2 || s2.Misses != 0 || s2.Stores != 0 {
		t.Fatalf("second backend: %+v, want 2 hits and nothing compiled", s2)
	}
	if !slices.Equal(first, second) {
		t.Fatal("the cached binary computes another output")
	}

	t.Setenv(compilecache.EnvNoCache, "1")
	t.Setenv(compilecache.EnvDir, t.TempDir())
	_, s3 := run()
	if s3 != (compilecache.Stats{}) {
		t.Fatalf("cache off: %+v", s3)
	}
	if des, err := os.ReadDir(os.Getenv(compilecache.EnvDir)); err != nil || len(des) != 0 {
		t.Fatalf("cache off stored %d files (%v)", len(des), err)
	}
}

// buildAndRun builds candidate c of k and runs it once on a small f32 problem.
func buildAndRun(t *testing.T, b *Backend, k *kernels.Kernel, c search.Candidate) []float32 {
	t.Helper()
	pr, err := b.Build(k, kernels.F32, c)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	p, err := kernels.NewSeededProblem(k, kernels.F32, kernels.Case{Shape: []int{4, 300}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	in, err := b.Load(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := pr.Output(in)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A cached binary the driver refuses (one an updated driver no longer
// takes) is built from source and replaced, and counted as refused.
func TestRefusedBinaryIsRebuilt(t *testing.T) {
	t.Setenv(compilecache.EnvDir, t.TempDir())
	t.Setenv(compilecache.EnvNoCache, "")
	b := openOrSkip(t)
	defer b.Close()
	const src = `__kernel void kt_refused(__global float* x) { x[get_global_id(0)] += 1.0f; }`
	k := b.cacheKey(src)
	if err := b.cache.Store(k, []byte("not a binary any driver takes")); err != nil {
		t.Fatal(err)
	}
	before := b.CacheStats()
	for i := range 2 {
		prog, err := b.build(src)
		if err != nil {
			t.Fatalf("build %d: %v", i, err)
		}
		if err := prog.Release(); err != nil {
			t.Fatal(err)
		}
	}
	s := b.CacheStats()
	if s.Rejected-before.Rejected != 1 || s.Hits-before.Hits != 1 || s.Stores-before.Stores != 1 {
		t.Fatalf("stats %+v after %+v: want 1 refused, 1 rebuilt and stored, then 1 hit", s, before)
	}
}
