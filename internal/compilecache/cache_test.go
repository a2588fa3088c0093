package compilecache

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// testKey is a CUDA-like key; variants change one field.
func testKey(src string) Key {
	return Key{API: "cuda", Source: src, Options: "--gpu-architecture=sm_90\x00--std=c++17", Compiler: "nvrtc 12.4",
		Driver: "12040", Device: "NVIDIA H100 80GB HBM3", Arch: "sm_90"}
}

// payload is the binary a test compile of src makes.
func payload(src string, n int) []byte {
	return bytes.Repeat([]byte("bin:"+src+";"), n)
}

func open(t *testing.T, maxBytes int64) *Cache {
	t.Helper()
	c, err := Open(filepath.Join(t.TempDir(), "kernels"), maxBytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// builder counts its compiles.
type builder struct {
	mu sync.Mutex
	n  int
}

func (b *builder) build(src string) func() ([]byte, error) {
	return func() ([]byte, error) {
		b.mu.Lock()
		b.n++
		b.mu.Unlock()
		return payload(src, 10), nil
	}
}

func TestGetCompilesOnceThenHits(t *testing.T) {
	c := open(t, 0)
	var b builder
	for i := range 3 {
		data, hit, err := c.Get(testKey("a"), b.build("a"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, payload("a", 10)) {
			t.Fatalf("get %d: wrong binary", i)
		}
		if hit != (i > 0) {
			t.Fatalf("get %d: hit %v", i, hit)
		}
	}
	if b.n != 1 {
		t.Fatalf("compiled %d times, want 1", b.n)
	}
	if s := c.Stats(); s.Hits != 2 || s.Misses != 1 || s.Stores != 1 || s.Rejected != 0 {
		t.Fatalf("stats %+v", s)
	}
	fi, err := os.Stat(c.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Fatalf("directory mode %v, want 0700", fi.Mode().Perm())
	}
}

// A change of anything that changes the binary (a new compiler above all)
// is a miss, never the old binary.
func TestKeyChangeMisses(t *testing.T) {
	base := testKey("a")
	tests := []struct {
		name   string
		change func(*Key)
	}{
		{"compiler version", func(k *Key) { k.Compiler = "nvrtc 12.8" }},
		{"driver version", func(k *Key) { k.Driver = "12080" }},
		{"options", func(k *Key) { k.Options += "\x00-lineinfo" }},
		{"source", func(k *Key) { k.Source += " " }},
		{"device", func(k *Key) { k.Device = "NVIDIA H200" }},
		{"arch", func(k *Key) { k.Arch = "sm_80" }},
		{"api", func(k *Key) { k.API = "opencl" }},
		// Length prefixes keep field boundaries apart.
		{"moved boundary", func(k *Key) { k.Compiler, k.Driver = k.Compiler+k.Driver[:1], k.Driver[1:] }},
	}
	c := open(t, 0)
	if err := c.Store(base, payload("a", 10)); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := base
			tt.change(&k)
			if data, ok := c.Load(k); ok {
				t.Fatalf("changed key loaded %q", data[:8])
			}
		})
	}
	if _, ok := c.Load(base); !ok {
		t.Fatal("the unchanged key misses")
	}
}

// A damaged entry is detected, removed and rebuilt; its bytes are never
// returned.
func TestCorruptEntryIsRebuilt(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, path string, good []byte)
	}{
		{"flipped payload byte", func(t *testing.T, path string, good []byte) {
			b := bytes.Clone(good)
			b[len(b)-3] ^= 0x01
			write(t, path, b)
		}},
		{"flipped checksum byte", func(t *testing.T, path string, good []byte) {
			b := bytes.Clone(good)
			b[headerLen-1] ^= 0x80
			write(t, path, b)
		}},
		{"truncated payload", func(t *testing.T, path string, good []byte) { write(t, path, good[:len(good)-5]) }},
		{"truncated header", func(t *testing.T, path string, good []byte) { write(t, path, good[:headerLen/2]) }},
		{"empty", func(t *testing.T, path string, good []byte) { write(t, path, nil) }},
		{"extra bytes", func(t *testing.T, path string, good []byte) { write(t, path, append(bytes.Clone(good), 0)) }},
		{"bad magic", func(t *testing.T, path string, good []byte) {
			b := bytes.Clone(good)
			b[0] = 'X'
			write(t, path, b)
		}},
		{"another key's entry", func(t *testing.T, path string, good []byte) {
			write(t, path, encode(testKey("other").sum(), payload("other", 10)))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := open(t, 0)
			k := testKey("a")
			var b builder
			if _, _, err := c.Get(k, b.build("a")); err != nil {
				t.Fatal(err)
			}
			path := c.path(k)
			good, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			tt.damage(t, path, good)
			if data, ok := c.Load(k); ok {
				t.Fatalf("loaded a damaged entry (%d bytes)", len(data))
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("damaged entry left in place: %v", err)
			}
			data, hit, err := c.Get(k, b.build("a"))
			if err != nil || hit || !bytes.Equal(data, payload("a", 10)) {
				t.Fatalf("rebuild: hit %v, err %v", hit, err)
			}
			if b.n != 2 {
				t.Fatalf("compiled %d times, want 2", b.n)
			}
			if _, ok := c.Load(k); !ok {
				t.Fatal("the rebuilt entry misses")
			}
			if s := c.Stats(); s.Rejected != 1 {
				t.Fatalf("stats %+v, want 1 rejected", s)
			}
		})
	}
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// An entry that is not the user's, that others may write, or that is not
// a regular file is never loaded, however intact.
func TestUnsafeEntryNotLoaded(t *testing.T) {
	if !checksMode {
		t.Skip("no Unix permissions here")
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, c *Cache, path string)
	}{
		{"another user's", func(t *testing.T, c *Cache, path string) {
			c.owner = func(os.FileInfo) (int, bool) { return c.uid + 1, true }
		}},
		{"group-writable", func(t *testing.T, c *Cache, path string) { chmod(t, path, 0o620) }},
		{"world-writable", func(t *testing.T, c *Cache, path string) { chmod(t, path, 0o602) }},
		{"symlink to an intact entry", func(t *testing.T, c *Cache, path string) {
			elsewhere := filepath.Join(t.TempDir(), "entry")
			if err := os.Rename(path, elsewhere); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(elsewhere, path); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := open(t, 0)
			k := testKey("a")
			if err := c.Store(k, payload("a", 10)); err != nil {
				t.Fatal(err)
			}
			tt.setup(t, c, c.path(k))
			if _, ok := c.Load(k); ok {
				t.Fatal("loaded an unsafe entry")
			}
			if s := c.Stats(); s.Rejected != 1 || s.Hits != 0 {
				t.Fatalf("stats %+v", s)
			}
		})
	}
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// The directory is made private; one of another user is refused.
func TestDirectory(t *testing.T) {
	if !checksMode {
		t.Skip("no Unix permissions here")
	}
	dir := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, 0); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("mode after Open: %v, %v; want 0700", fi.Mode().Perm(), err)
	}
	other := func(os.FileInfo) (int, bool) { return os.Getuid() + 1, true }
	if _, err := openWith(dir, 0, other); err == nil {
		t.Fatal("opened a directory of another user")
	}
}

// Eviction removes the least recently used entries first, a hit making
// an entry recent, until the cache is under its bound.
func TestEvictionIsLRU(t *testing.T) {
	entrySize := int64(headerLen + len(payload("x", 100)))
	c := open(t, 4*entrySize) // room for four entries; eviction goes down to 3.6
	t0 := time.Now().Add(-time.Hour)
	for i, src := range []string{"a", "b", "c", "d"} {
		if err := c.Store(testKey(src), payload(src, 100)); err != nil {
			t.Fatal(err)
		}
		at := t0.Add(time.Duration(i) * time.Minute) // a oldest, d newest
		if err := os.Chtimes(c.path(testKey(src)), at, at); err != nil {
			t.Fatal(err)
		}
	}
	c.now = func() time.Time { return t0.Add(10 * time.Minute) }
	if _, ok := c.Load(testKey("a")); !ok { // a becomes the most recent
		t.Fatal("a misses")
	}
	if err := c.Store(testKey("e"), payload("e", 100)); err != nil {
		t.Fatal(err)
	}
	// Five entries over a bound of four: down to 3.6, so b and c go.
	for src, want := range map[string]bool{"a": true, "b": false, "c": false, "d": true, "e": true} {
		if _, err := os.Stat(c.path(testKey(src))); (err == nil) != want {
			t.Errorf("entry %s: present %v, want %v", src, err == nil, want)
		}
	}
	u, err := c.Usage()
	if err != nil {
		t.Fatal(err)
	}
	if u.Entries != 3 || u.Bytes > c.Max() {
		t.Fatalf("usage %+v after eviction", u)
	}
	if s := c.Stats(); s.Evicted != 2 {
		t.Fatalf("stats %+v, want 2 evicted", s)
	}
}

// Many goroutines getting, storing and evicting at once each get their
// key's binary and nothing else.
func TestConcurrentGoroutines(t *testing.T) {
	entrySize := int64(headerLen + len(payload("k00", 50)))
	c := open(t, 6*entrySize) // fewer than the keys: eviction runs throughout
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				src := fmt.Sprintf("k%02d", (g*7+i)%12)
				data, _, err := c.Get(testKey(src), func() ([]byte, error) { return payload(src, 50), nil })
				if err != nil {
					t.Error(err)
					return
				}
				if !bytes.Equal(data, payload(src, 50)) {
					t.Errorf("key %s: got another binary", src)
					return
				}
			}
		}()
	}
	wg.Wait()
	if s := c.Stats(); s.Rejected != 0 || s.Failed != 0 || s.Hits == 0 {
		t.Fatalf("stats %+v", s)
	}
	checkAllIntact(t, c)
}

// checkAllIntact loads every entry the directory holds.
func checkAllIntact(t *testing.T, c *Cache) {
	t.Helper()
	es, err := c.scan()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		b, err := os.ReadFile(e.path)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) < headerLen {
			t.Fatalf("%s: %d bytes", e.path, len(b))
		}
		var sum [32]byte
		copy(sum[:], b[len(magic)+4:])
		if _, err := decode(b, sum); err != nil {
			t.Fatalf("%s: %v", e.path, err)
		}
	}
}

// helperEnv makes the test binary a cache user (TestHelperProcess).
const helperEnv = "COMPILECACHE_TEST_HELPER_DIR"

// Two processes sharing the directory, storing, loading and evicting at
// once, each get their keys' binaries, and leave only whole entries.
func TestConcurrentProcesses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kernels")
	cmds := make([]*exec.Cmd, 2)
	outs := make([]bytes.Buffer, 2)
	for i := range cmds {
		cmds[i] = exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
		cmds[i].Env = append(os.Environ(), helperEnv+"="+dir, "COMPILECACHE_TEST_HELPER_SEED="+strconv.Itoa(i))
		cmds[i].Stdout, cmds[i].Stderr = &outs[i], &outs[i]
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v\n%s", i, err, outs[i].String())
		}
	}
	c, err := Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	checkAllIntact(t, c)
}

// TestHelperProcess is one of TestConcurrentProcesses's processes.
func TestHelperProcess(t *testing.T) {
	dir := os.Getenv(helperEnv)
	if dir == "" {
		t.Skip("run by TestConcurrentProcesses")
	}
	seed, _ := strconv.Atoi(os.Getenv("COMPILECACHE_TEST_HELPER_SEED"))
	entrySize := int64(headerLen + len(payload("k00", 2000)))
	c, err := Open(dir, 8*entrySize)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 400 {
		src := fmt.Sprintf("k%02d", (seed*5+i*3)%16)
		data, _, err := c.Get(testKey(src), func() ([]byte, error) { return payload(src, 2000), nil })
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, payload(src, 2000)) {
			t.Fatalf("key %s: got another binary", src)
		}
	}
	if s := c.Stats(); s.Rejected != 0 {
		t.Fatalf("stats %+v: a whole entry was refused", s)
	}
}

// A binary its user could not use is removed and counted as refused, not
// as a hit.
func TestReject(t *testing.T) {
	c := open(t, 0)
	k := testKey("a")
	if err := c.Store(k, payload("a", 10)); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Load(k); !ok {
		t.Fatal("miss")
	}
	c.Reject(k)
	if _, ok := c.Load(k); ok {
		t.Fatal("a rejected entry loaded")
	}
	if s := c.Stats(); s.Hits != 0 || s.Misses != 2 || s.Rejected != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestClearAndUsage(t *testing.T) {
	c := open(t, 0)
	for _, src := range []string{"a", "b"} {
		if err := c.Store(testKey(src), payload(src, 10)); err != nil {
			t.Fatal(err)
		}
	}
	stray := filepath.Join(c.Dir(), "README")
	write(t, stray, []byte("not an entry"))
	u, err := c.Usage()
	if err != nil || u.Entries != 2 || u.Bytes != int64(2*(headerLen+len(payload("a", 10)))) {
		t.Fatalf("usage %+v, %v", u, err)
	}
	n, err := c.Clear()
	if err != nil || n != 2 {
		t.Fatalf("cleared %d, %v; want 2", n, err)
	}
	if _, ok := c.Load(testKey("a")); ok {
		t.Fatal("an entry survived Clear")
	}
	if _, err := os.Stat(stray); err != nil {
		t.Fatalf("Clear removed a file that is not the cache's: %v", err)
	}
}

// A nil cache is off: it builds every time and stores nothing.
func TestNilCacheIsOff(t *testing.T) {
	var c *Cache
	var b builder
	for range 2 {
		if _, hit, err := c.Get(testKey("a"), b.build("a")); hit || err != nil {
			t.Fatalf("hit %v, err %v", hit, err)
		}
	}
	if b.n != 2 || c.Stats() != (Stats{}) {
		t.Fatalf("built %d times, stats %+v", b.n, c.Stats())
	}
	if n, err := c.Clear(); n != 0 || err != nil {
		t.Fatalf("Clear: %d, %v", n, err)
	}
}

func TestDefaultFromEnvironment(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c")
	tests := []struct {
		name    string
		env     map[string]string
		off     bool
		max     int64
		wantErr bool
	}{
		{"default", map[string]string{EnvDir: dir}, false, DefaultMaxBytes, false},
		{"off", map[string]string{EnvDir: dir, EnvNoCache: "1"}, true, 0, false},
		{"off is not 0", map[string]string{EnvDir: dir, EnvNoCache: "0"}, false, DefaultMaxBytes, false},
		{"bound", map[string]string{EnvDir: dir, EnvMax: "256MiB"}, false, 256 << 20, false},
		{"bad bound", map[string]string{EnvDir: dir, EnvMax: "lots"}, false, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, v := range []string{EnvDir, EnvNoCache, EnvMax} {
				t.Setenv(v, tt.env[v])
			}
			c, err := Default()
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v", err)
			}
			if err != nil {
				return
			}
			if (c == nil) != tt.off {
				t.Fatalf("cache %v, want off %v", c, tt.off)
			}
			if c != nil && (c.Dir() != dir || c.Max() != tt.max) {
				t.Fatalf("dir %s max %d", c.Dir(), c.Max())
			}
		})
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"1024", 1024}, {"1K", 1 << 10}, {"512MiB", 512 << 20}, {"2 GiB", 2 << 30}, {"1.5G", 3 << 29},
		{"", -1}, {"0", -1}, {"-1M", -1}, {"ten", -1}, {"1TB", -1},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if tt.want < 0 {
			if err == nil {
				t.Errorf("ParseSize(%q) = %d, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}
