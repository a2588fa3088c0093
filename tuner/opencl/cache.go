package opencl

import (
	"github.com/kerntune/kerntune/internal/cldrv"
	"github.com/kerntune/kerntune/internal/compilecache"
)

// cacheKey is everything that changes the device binary of src: the
// platform (the compiler) and its version, the driver, the device with
// its extensions (a CPU device's binary follows the host's features).
func (b *Backend) cacheKey(src string) compilecache.Key {
	p := b.props
	return compilecache.Key{
		API:      "opencl",
		Source:   src,
		Options:  buildOptions,
		Compiler: b.platform.Vendor + "\x00" + b.platform.Name + "\x00" + b.platform.Version + "\x00" + p.CVersion,
		Driver:   p.DriverVersion,
		Device:   p.Vendor + "\x00" + p.Name + "\x00" + p.Version,
		Arch:     p.Extensions,
	}
}

// build builds OpenCL C source for the device, from the binary in the
// compile cache when there is one; a program built from source leaves its
// binary there for the next run.
func (b *Backend) build(src string) (*cldrv.Program, error) {
	if b.cache == nil {
		return b.ctx.Build(src, buildOptions)
	}
	k := b.cacheKey(src)
	if bin, ok := b.cache.Load(k); ok {
		prog, err := b.ctx.BuildBinary(bin, buildOptions)
		if err == nil {
			return prog, nil
		}
		// A binary the driver refuses (an update it does not tell by
		// its version): built from source below and replaced.
		b.cache.Reject(k)
	}
	prog, err := b.ctx.Build(src, buildOptions)
	if err != nil {
		return nil, err
	}
	if bin, err := prog.Binary(); err == nil {
		_ = b.cache.Store(k, bin) // a failed store costs the next run a compile; counted in the stats
	}
	return prog, nil
}

// CacheStats counts the compile cache's hits, misses and stores since the
// backend opened (zero when the cache is off).
func (b *Backend) CacheStats() compilecache.Stats { return b.cache.Stats() }
