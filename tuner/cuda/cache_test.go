package cuda

import (
	"bytes"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/kerntune/kerntune/internal/compilecache"
	"github.com/kerntune/kerntune/internal/cudadrv"
)

// fakeNVRTC counts compiles; its image names the source, options and
// NVRTC version, as a real one depends on them.
type fakeNVRTC struct {
	mu    sync.Mutex
	calls int
	fail  bool
}

func (f *fakeNVRTC) compiler(version string) compileFunc {
	return func(src, name string, opts []string) ([]byte, string, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.calls++
		if f.fail {
			return nil, "kernel.cu(1): error: expected a ;", errors.New("NVRTC_ERROR_COMPILATION")
		}
		return []byte("cubin " + version + " " + name + " " + src), "", nil
	}
}

var h100 = cudadrv.DeviceProps{Name: "NVIDIA H100 80GB HBM3", Major: 9, Minor: 0}

// testBackend is a backend with only what compile uses: a fake NVRTC of
// the given version and a cache in dir (off when dir is "").
func testBackend(t *testing.T, f *fakeNVRTC, nvrtc, dir string) *Backend {
	t.Helper()
	b := &Backend{props: h100, compileFn: f.compiler(nvrtc), vers: versions{nvrtc: nvrtc, driver: "12040"}}
	if dir != "" {
		c, err := compilecache.Open(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		b.cache = c
	}
	return b
}

// A second run (a new backend on the same cache) compiles nothing it
// compiled before; a new NVRTC compiles again; a failed compile is not
// cached; with the cache off every compile runs.
func TestCompileThroughCache(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kernels")
	var f fakeNVRTC
	const src = `extern "C" __global__ void k() {}`
	compile := func(b *Backend) []byte {
		t.Helper()
		img, err := b.compile(src, "k.cu")
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	first := compile(testBackend(t, &f, "12.4", dir))
	second := testBackend(t, &f, "12.4", dir)
	if img := compile(second); !bytes.Equal(img, first) || f.calls != 1 {
		t.Fatalf("second run: %d compiles, image %q; want 1 compile and the first image", f.calls, img)
	}
	if s := second.CacheStats(); s.Hits != 1 || s.Misses != 0 {
		t.Fatalf("second run stats %+v", s)
	}
	if img := compile(testBackend(t, &f, "12.8", dir)); bytes.Equal(img, first) || f.calls != 2 {
		t.Fatalf("new NVRTC: %d compiles, image %q; want a compile with the new version", f.calls, img)
	}

	f.fail = true
	for range 2 {
		if _, err := testBackend(t, &f, "12.4", dir).compile("broken", "k.cu"); err == nil {
			t.Fatal("a failed compile succeeded")
		}
	}
	if f.calls != 4 {
		t.Fatalf("%d compiles; a failed compile must not be cached", f.calls)
	}

	f.fail = false
	off := testBackend(t, &f, "12.4", "")
	compile(off)
	compile(off)
	if f.calls != 6 || off.CacheStats() != (compilecache.Stats{}) {
		t.Fatalf("cache off: %d compiles, stats %+v", f.calls, off.CacheStats())
	}
}

// The key changes with everything that changes the image.
func TestCacheKey(t *testing.T) {
	v := versions{nvrtc: "12.4", driver: "12040"}
	opts := []string{"--gpu-architecture=sm_90", "--std=c++17"}
	base := cacheKey("src", "k.cu", opts, v, h100)
	h200 := h100
	h200.Name = "NVIDIA H200"
	a100 := h100
	a100.Major, a100.Minor = 8, 0
	tests := []struct {
		name string
		key  compilecache.Key
	}{
		{"nvrtc version", cacheKey("src", "k.cu", opts, versions{nvrtc: "12.8", driver: "12040"}, h100)},
		{"driver version", cacheKey("src", "k.cu", opts, versions{nvrtc: "12.4", driver: "12080"}, h100)},
		{"source", cacheKey("src2", "k.cu", opts, v, h100)},
		{"source name", cacheKey("src", "j.cu", opts, v, h100)},
		{"options", cacheKey("src", "k.cu", append(opts[:1:1], "-lineinfo"), v, h100)},
		{"device", cacheKey("src", "k.cu", opts, v, h200)},
		{"compute capability", cacheKey("src", "k.cu", opts, v, a100)},
	}
	for _, tt := range tests {
		if tt.key == base {
			t.Errorf("%s: same key", tt.name)
		}
	}
}
