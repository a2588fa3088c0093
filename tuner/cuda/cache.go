package cuda

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kerntune/kerntune/internal/compilecache"
	"github.com/kerntune/kerntune/internal/cudadrv"
)

// compileFunc compiles CUDA source to a module image: cudadrv.Lib.Compile,
// or a test's.
type compileFunc func(src, name string, opts []string) (image []byte, log string, err error)

// versions are what keys the compile cache besides the source and the
// device: NVRTC's version ("12.4") and the driver's (cuDriverGetVersion).
type versions struct{ nvrtc, driver string }

// openCache opens the compile cache, off when the versions that key it
// are unknown or the environment turns it off. A cache that cannot open
// (an unsafe directory) leaves every compile to NVRTC; kerntune cache
// says why.
func (b *Backend) openCache() {
	ma, mi, err := b.lib.NVRTCVersion()
	if err != nil {
		return // without NVRTC nothing compiles, and Compile says why
	}
	drv, err := b.lib.DriverVersion()
	if err != nil {
		return
	}
	b.vers = versions{nvrtc: fmt.Sprintf("%d.%d", ma, mi), driver: strconv.Itoa(drv)}
	b.cache, _ = compilecache.Default()
}

// cacheKey is everything that changes the image NVRTC makes of src: the
// options and source name, NVRTC's and the driver's versions, the device
// and its compute capability.
func cacheKey(src, name string, opts []string, v versions, p cudadrv.DeviceProps) compilecache.Key {
	return compilecache.Key{
		API:      "cuda",
		Source:   src,
		Options:  name + "\x00" + strings.Join(opts, "\x00"),
		Compiler: "nvrtc " + v.nvrtc,
		Driver:   v.driver,
		Device:   p.Name,
		Arch:     p.Arch(),
	}
}

// compile compiles src with NVRTC for the device, or takes its image from
// the compile cache; an image NVRTC made is stored there for the next run.
// A failed compile is not cached.
func (b *Backend) compile(src, name string) ([]byte, error) {
	opts := b.nvrtcOptions()
	build := func() ([]byte, error) {
		img, log, err := b.compileFn(src, name, opts)
		if err != nil {
			return nil, fmt.Errorf("%w\n%s", err, log)
		}
		return img, nil
	}
	if b.cache == nil {
		return build()
	}
	img, _, err := b.cache.Get(cacheKey(src, name, opts, b.vers, b.props), build)
	return img, err
}

// CacheStats counts the compile cache's hits, misses and stores since the
// backend opened (zero when the cache is off).
func (b *Backend) CacheStats() compilecache.Stats { return b.cache.Stats() }
