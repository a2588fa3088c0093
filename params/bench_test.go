package params

import (
	"testing"
)

// BenchmarkResolve measures Resolve as an application calls it before a
// launch, with the real environment lookup (os.LookupEnv): the same shape
// again and again, so every call but the first is answered from the cache.
func BenchmarkResolve(b *testing.B) {
	data := readTestFile(b)
	cases := []struct {
		name   string
		env    map[string]string
		family string
		shape  []int
	}{
		{"exact", nil, GemvNT, []int{1, 896, 4864}},
		{"class", nil, GemvNT, []int{1, 896, 896}},
		{"fallback", nil, GemvNT, []int{1, 4096, 4096}},
		{"default", nil, GemvNT, []int{1, 151936, 896}},
		{"env", map[string]string{"KERNTUNE_GEMV_NT_BN": "8"}, GemvNT, []int{1, 896, 896}},
		{"gemm_check", nil, GemmAV, []int{512, 4864, 896}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for k, v := range c.env {
				b.Setenv(k, v)
			}
			l, err := LoadBytes(data, Options{Device: "cpu:amd-epyc-7b13-2c"})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := l.Resolve(c.family, "f32", c.shape); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkResolveFirst is the first resolve of a shape: every call a shape
// not seen before (n runs through the tiny class), so none is answered from
// the cache and each is resolved, then cached.
func BenchmarkResolveFirst(b *testing.B) {
	l := benchLoader(b)
	b.ReportAllocs()
	shape := []int{1, 1, 896}
	for b.Loop() {
		shape[1] = shape[1]%2047 + 1 // 1..2047: more shapes than the cache holds
		if _, err := l.Resolve(GemvNT, "f32", shape); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLaunch is Launch on a shape seen before: the cached result itself,
// shared and immutable, with the variables read as Resolve reads them.
func BenchmarkLaunch(b *testing.B) {
	l := benchLoader(b)
	for _, c := range []struct {
		name   string
		family string
		shape  []int
	}{{"gemv_nt", GemvNT, []int{1, 896, 4864}}, {"gemm_av", GemmAV, []int{512, 4864, 896}}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				x, err := l.Launch(c.family, "f32", c.shape)
				if err != nil || x.Int("NC") < 0 {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkParallel is Resolve and Launch from all CPUs at once; the
// calls only read what they share between goroutines.
func BenchmarkParallel(b *testing.B) {
	l := benchLoader(b)
	shape := []int{1, 896, 4864}
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"resolve", func() error { _, err := l.Resolve(GemvNT, "f32", shape); return err }},
		{"launch", func() error { _, err := l.Launch(GemvNT, "f32", shape); return err }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := c.call(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// benchLoader loads the test file for the CPU device the benchmarks resolve on.
func benchLoader(b *testing.B) *Loader {
	b.Helper()
	l, err := Load(testFile, Options{Device: "cpu:amd-epyc-7b13-2c"})
	if err != nil {
		b.Fatal(err)
	}
	return l
}
