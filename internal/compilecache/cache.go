package compilecache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The environment variables of the default cache.
const (
	// EnvNoCache set to anything but "", "0" or "false" turns the cache off.
	EnvNoCache = "KERNTUNE_NO_CACHE"
	// EnvDir is the cache's directory, instead of the user's cache
	// directory's kerntune/kernels.
	EnvDir = "KERNTUNE_CACHE_DIR"
	// EnvMax bounds the cache's size: bytes, or a number with a K, KiB,
	// M, MiB, G or GiB suffix (all binary).
	EnvMax = "KERNTUNE_CACHE_MAX"
)

// DefaultMaxBytes is the size bound when EnvMax does not give one.
const DefaultMaxBytes int64 = 1 << 30

const (
	entryExt   = ".ktc"
	tempPrefix = ".tmp-"
	magic      = "KTCC"
	// headerLen: magic, format version (uint32), key hash, payload length
	// (uint64), payload hash.
	headerLen = len(magic) + 4 + sha256.Size + 8 + sha256.Size
	// staleTemp is the age past which a temporary file is taken to be left
	// by a run that died while storing, and removed.
	staleTemp = time.Hour
)

// Errors of entries that Load refuses; it counts them as Rejected.
var (
	errCorrupt = errors.New("corrupt or truncated entry")
	errUnsafe  = errors.New("unsafe entry")
)

// Stats count what a Cache did since it was opened.
type Stats struct {
	Hits     int64 `json:"hits"`     // entries loaded
	Misses   int64 `json:"misses"`   // lookups that loaded nothing (Rejected included)
	Stores   int64 `json:"stores"`   // entries written
	Rejected int64 `json:"rejected"` // entries found but refused: corrupt, truncated, not the user's, writable by others
	Failed   int64 `json:"failed"`   // stores that failed (the binary was still used)
	Evicted  int64 `json:"evicted"`  // entries removed to keep under the bound
}

// Cache is a directory of compiled binaries. A nil *Cache is a cache that
// is off: it loads nothing and stores nothing. Its methods are safe for
// concurrent use, and several processes may share one directory.
type Cache struct {
	dir string
	max int64
	uid int
	// owner reports a file's owner (false where the system does not say);
	// tests replace it to simulate files of another user.
	owner func(os.FileInfo) (uid int, ok bool)
	// now stamps a hit's entry; tests replace it to order entries.
	now func() time.Time

	size     atomic.Int64 // bytes in entries, as this process last counted and since added
	evicting sync.Mutex

	hits, misses, stores, rejected, failed, evicted atomic.Int64
}

// Open opens (creating it if needed) the cache in dir, bounded to
// maxBytes (DefaultMaxBytes if not positive). The directory is made
// private to the user; one owned by another user is an error.
func Open(dir string, maxBytes int64) (*Cache, error) {
	return openWith(dir, maxBytes, fileOwner)
}

// openWith is Open with the function that tells a file's owner.
func openWith(dir string, maxBytes int64, owner func(os.FileInfo) (int, bool)) (*Cache, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	c := &Cache{dir: dir, max: maxBytes, uid: os.Getuid(), owner: owner, now: time.Now}
	if err := c.secureDir(); err != nil {
		return nil, err
	}
	u, err := c.Usage()
	if err != nil {
		return nil, err
	}
	c.size.Store(u.Bytes)
	return c, nil
}

// secureDir creates the directory 0700 and checks that it is the user's
// and that no one else may enter it.
func (c *Cache) secureDir() error {
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return fmt.Errorf("compile cache: %w", err)
	}
	fi, err := os.Stat(c.dir)
	if err != nil {
		return fmt.Errorf("compile cache: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("compile cache: %s is not a directory", c.dir)
	}
	if uid, ok := c.owner(fi); ok && uid != c.uid {
		return fmt.Errorf("compile cache: %s belongs to user %d, not to this user (%d)", c.dir, uid, c.uid)
	}
	if checksMode && fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(c.dir, 0o700); err != nil {
			return fmt.Errorf("compile cache: making %s private: %w", c.dir, err)
		}
	}
	return nil
}

// Default opens the cache the environment asks for: nil (off) when
// KERNTUNE_NO_CACHE is set, else in DefaultDir, bounded by
// KERNTUNE_CACHE_MAX.
func Default() (*Cache, error) {
	if Off() {
		return nil, nil
	}
	dir, err := DefaultDir()
	if err != nil {
		return nil, err
	}
	maxBytes, err := MaxFromEnv()
	if err != nil {
		return nil, err
	}
	return Open(dir, maxBytes)
}

// Off reports whether KERNTUNE_NO_CACHE turns the cache off.
func Off() bool {
	switch strings.ToLower(strings.TrimSpace(os.Getenv(EnvNoCache))) {
	case "", "0", "false", "no":
		return false
	}
	return true
}

// DefaultDir is KERNTUNE_CACHE_DIR, else kerntune/kernels in the user's
// cache directory ($XDG_CACHE_HOME or ~/.cache on Linux,
// ~/Library/Caches on macOS).
func DefaultDir() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		return d, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("compile cache: %w (set %s)", err, EnvDir)
	}
	return filepath.Join(base, "kerntune", "kernels"), nil
}

// MaxFromEnv is the bound KERNTUNE_CACHE_MAX gives, or DefaultMaxBytes.
func MaxFromEnv() (int64, error) {
	s := os.Getenv(EnvMax)
	if s == "" {
		return DefaultMaxBytes, nil
	}
	n, err := ParseSize(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", EnvMax, err)
	}
	return n, nil
}

// ParseSize reads a positive size: bytes, or a number with a K, KiB, M,
// MiB, G or GiB suffix (powers of 1024).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(t, 64)
	if err != nil || n <= 0 || n*float64(mult) > 1<<62 {
		return 0, fmt.Errorf("size %q: want a positive number of bytes, or with a K, M or G (KiB, MiB, GiB) suffix", s)
	}
	return int64(n * float64(mult)), nil
}

// Dir is the cache's directory.
func (c *Cache) Dir() string { return c.dir }

// Max is the cache's size bound in bytes.
func (c *Cache) Max() int64 { return c.max }

// Stats returns the counts so far (zero for a nil cache).
func (c *Cache) Stats() Stats {
	if c == nil {
		return Stats{}
	}
	return Stats{Hits: c.hits.Load(), Misses: c.misses.Load(), Stores: c.stores.Load(),
		Rejected: c.rejected.Load(), Failed: c.failed.Load(), Evicted: c.evicted.Load()}
}

func (c *Cache) path(k Key) string { return filepath.Join(c.dir, k.name()) }

// Load returns the binary stored under k, if a whole, intact entry of the
// user's is there. A corrupt, truncated or unsafe entry is removed, so
// that the caller's compile replaces it.
func (c *Cache) Load(k Key) ([]byte, bool) {
	if c == nil {
		return nil, false
	}
	path := c.path(k)
	data, err := c.read(path, k.sum())
	if err != nil {
		c.misses.Add(1)
		if !errors.Is(err, fs.ErrNotExist) {
			c.rejected.Add(1)
			// The directory is the user's: whatever the entry is, it may
			// go; the store after the compile would replace it anyway.
			_ = os.Remove(path)
		}
		return nil, false
	}
	c.hits.Add(1)
	// A hit makes the entry the most recently used. It may have been
	// evicted by another run since it was read; the binary is in hand.
	now := c.now()
	_ = os.Chtimes(path, now, now)
	return data, true
}

// Reject removes k's entry after a Load whose binary its user could not
// use (a driver refused it), and counts that load as a refused miss
// instead of a hit; the caller's compile then stores a new binary.
func (c *Cache) Reject(k Key) {
	if c == nil {
		return
	}
	c.hits.Add(-1)
	c.misses.Add(1)
	c.rejected.Add(1)
	_ = os.Remove(c.path(k)) // another run may have replaced or removed it
}

// read reads and checks the entry at path.
func (c *Cache) read(path string, sum [sha256.Size]byte) ([]byte, error) {
	// The checks apply to the file opened, not to what the name showed a
	// moment before: no symbolic link is followed, and a FIFO does not
	// block the open.
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file", errUnsafe, path)
	}
	if err := c.safe(fi); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errUnsafe, path, err)
	}
	if fi.Size() < int64(headerLen) || fi.Size() > c.max+int64(headerLen) {
		return nil, fmt.Errorf("%w: %s has %d bytes", errCorrupt, path, fi.Size())
	}
	buf := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, buf); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errCorrupt, path, err)
	}
	return decode(buf, sum)
}

// safe reports why a file may not be loaded: not the user's, or writable
// by others.
func (c *Cache) safe(fi os.FileInfo) error {
	if uid, ok := c.owner(fi); ok && uid != c.uid {
		return fmt.Errorf("owned by user %d, not this user (%d)", uid, c.uid)
	}
	if checksMode && fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("mode %v lets others write it", fi.Mode().Perm())
	}
	return nil
}

// encode is an entry file's bytes.
func encode(sum [sha256.Size]byte, data []byte) []byte {
	buf := make([]byte, 0, headerLen+len(data))
	buf = append(buf, magic...)
	buf = binary.LittleEndian.AppendUint32(buf, formatVersion)
	buf = append(buf, sum[:]...)
	buf = binary.LittleEndian.AppendUint64(buf, uint64(len(data)))
	ps := sha256.Sum256(data)
	buf = append(buf, ps[:]...)
	return append(buf, data...)
}

// decode checks an entry file's bytes against the key's hash and returns
// the payload.
func decode(buf []byte, sum [sha256.Size]byte) ([]byte, error) {
	h := buf[:headerLen]
	if string(h[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: bad magic", errCorrupt)
	}
	h = h[len(magic):]
	if v := binary.LittleEndian.Uint32(h); v != formatVersion {
		return nil, fmt.Errorf("%w: format version %d, want %d", errCorrupt, v, formatVersion)
	}
	h = h[4:]
	if !bytes.Equal(h[:sha256.Size], sum[:]) {
		return nil, fmt.Errorf("%w: stored under another key", errCorrupt)
	}
	h = h[sha256.Size:]
	payload := buf[headerLen:]
	if n := binary.LittleEndian.Uint64(h); n != uint64(len(payload)) {
		return nil, fmt.Errorf("%w: %d payload bytes, header says %d", errCorrupt, len(payload), n)
	}
	h = h[8:]
	if ps := sha256.Sum256(payload); !bytes.Equal(ps[:], h[:sha256.Size]) {
		return nil, fmt.Errorf("%w: payload checksum mismatch", errCorrupt)
	}
	return payload, nil
}

// Store writes data under k: to a temporary file, renamed into place so
// that readers see the whole entry or none. A store that pushes the cache
// past its bound evicts the least recently used entries. A store that
// fails is counted in Stats.Failed.
func (c *Cache) Store(k Key, data []byte) error {
	if c == nil {
		return nil
	}
	if int64(len(data)) > c.max {
		c.failed.Add(1)
		return fmt.Errorf("compile cache: %d bytes exceed the bound of %d", len(data), c.max)
	}
	tmp, err := os.CreateTemp(c.dir, tempPrefix+"*") // mode 0600
	if err != nil {
		c.failed.Add(1)
		return fmt.Errorf("compile cache: %w", err)
	}
	_, werr := tmp.Write(encode(k.sum(), data))
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), c.path(k))
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
		c.failed.Add(1)
		return fmt.Errorf("compile cache: storing an entry: %w", werr)
	}
	c.stores.Add(1)
	if c.size.Add(int64(headerLen+len(data))) > c.max {
		c.evict()
	}
	return nil
}

// Get returns k's binary from the cache (hit true) or from build, which it
// then stores. A store that fails costs only a later compile: it is
// counted (Stats.Failed), and the binary is returned.
func (c *Cache) Get(k Key, build func() ([]byte, error)) (data []byte, hit bool, err error) {
	if data, ok := c.Load(k); ok {
		return data, true, nil
	}
	data, err = build()
	if err != nil {
		return nil, false, err
	}
	_ = c.Store(k, data) // counted in Stats.Failed; the binary is good
	return data, false, nil
}
