package compilecache

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Usage is what the cache directory holds.
type Usage struct {
	Dir      string `json:"dir"`
	Entries  int    `json:"entries"`
	Bytes    int64  `json:"bytes"`
	MaxBytes int64  `json:"max_bytes"`
}

// entry is one entry file as eviction sees it.
type entry struct {
	path string
	size int64
	mod  time.Time
}

// scan lists the entry files. Files that vanish while it looks (another
// run evicting) are skipped; temporary files older than staleTemp, left by
// a run that died while storing, are removed.
func (c *Cache) scan() ([]entry, error) {
	des, err := os.ReadDir(c.dir)
	if err != nil {
		return nil, fmt.Errorf("compile cache: %w", err)
	}
	var es []entry
	for _, de := range des {
		name := de.Name()
		isTemp := strings.HasPrefix(name, tempPrefix)
		if !isTemp && !strings.HasSuffix(name, entryExt) {
			continue
		}
		fi, err := de.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("compile cache: %w", err)
		}
		path := filepath.Join(c.dir, name)
		if isTemp {
			if time.Since(fi.ModTime()) > staleTemp {
				_ = os.Remove(path) // another run may have removed it first
			}
			continue
		}
		es = append(es, entry{path: path, size: fi.Size(), mod: fi.ModTime()})
	}
	return es, nil
}

// Usage counts the entries and their bytes (zero for a nil cache).
func (c *Cache) Usage() (Usage, error) {
	if c == nil {
		return Usage{}, nil
	}
	es, err := c.scan()
	if err != nil {
		return Usage{}, err
	}
	u := Usage{Dir: c.dir, Entries: len(es), MaxBytes: c.max}
	for _, e := range es {
		u.Bytes += e.size
	}
	return u, nil
}

// evict removes the least recently used entries until the cache is under
// nine tenths of its bound (the margin spares a scan on every store that
// follows). One eviction runs at a time in a process; runs sharing the
// directory may evict at once, and an entry another removed first is
// simply gone.
func (c *Cache) evict() {
	if !c.evicting.TryLock() {
		return // the eviction under way will count this store's bytes
	}
	defer c.evicting.Unlock()
	es, err := c.scan()
	if err != nil {
		return // the next store tries again
	}
	var total int64
	for _, e := range es {
		total += e.size
	}
	slices.SortFunc(es, func(a, b entry) int { return a.mod.Compare(b.mod) })
	target := c.max - c.max/10
	for _, e := range es {
		if total <= target {
			break
		}
		err := os.Remove(e.path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil {
			c.evicted.Add(1)
		}
		total -= e.size
	}
	c.size.Store(total)
}

// Clear removes every entry and temporary file and returns how many
// entries it removed.
func (c *Cache) Clear() (int, error) {
	if c == nil {
		return 0, nil
	}
	des, err := os.ReadDir(c.dir)
	if err != nil {
		return 0, fmt.Errorf("compile cache: %w", err)
	}
	n := 0
	var errs []error
	for _, de := range des {
		name := de.Name()
		isEntry := strings.HasSuffix(name, entryExt)
		if !isEntry && !strings.HasPrefix(name, tempPrefix) {
			continue // not the cache's: left alone
		}
		err := os.Remove(filepath.Join(c.dir, name))
		switch {
		case err == nil && isEntry:
			n++
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			errs = append(errs, err)
		}
	}
	c.size.Store(0)
	if err := errors.Join(errs...); err != nil {
		return n, fmt.Errorf("compile cache: clearing: %w", err)
	}
	return n, nil
}
