package metal

import (
	"fmt"

	"github.com/kerntune/kerntune/tuner/internal/gpuhost"
)

// storageMode is where the backend keeps a problem's buffers.
type storageMode uint8

const (
	// storageShared: one copy in system memory that the CPU maps
	// (-[MTLBuffer contents]): the GPU's own memory on Apple silicon,
	// whose memory is unified.
	storageShared storageMode = iota
	// storagePrivate: the GPU's own memory, which the CPU cannot map:
	// the discrete GPU of an Intel Mac (an AMD Radeon), where a shared
	// buffer lives in system memory and every kernel would read it over
	// PCIe. Filled and read through a shared staging buffer and a blit.
	storagePrivate
)

// MTLResourceOptions of newBufferWithLength:options:: MTLStorageMode << 4
// (MTLResourceStorageModeShift), Shared 0 and Private 2.
const (
	mtlResourceStorageModeShared  = 0 << 4
	mtlResourceStorageModePrivate = 2 << 4
)

// storageFor is the storage of a problem's buffers on a device with or
// without unified memory (-[MTLDevice hasUnifiedMemory]).
func storageFor(unifiedMemory bool) storageMode {
	if unifiedMemory {
		return storageShared
	}
	return storagePrivate
}

// resourceOptions is the MTLResourceOptions a buffer of this storage is
// allocated with.
func (s storageMode) resourceOptions() uint64 {
	if s == storagePrivate {
		return mtlResourceStorageModePrivate
	}
	return mtlResourceStorageModeShared
}

func (s storageMode) String() string {
	if s == storagePrivate {
		return "private"
	}
	return "shared"
}

// stager is what moving bytes into and out of a private buffer takes: a
// shared staging buffer the CPU maps, and a blit
// (copyFromBuffer:sourceOffset:toBuffer:destinationOffset:size:) in a
// command buffer that is waited for. B is the buffer handle.
type stager[B any] interface {
	staging(n int) (B, []byte, error) // a new shared buffer of n bytes and its mapping
	release(B)
	blit(src, dst B, n int) error
}

// blitBytes is n rounded up to the 4-byte multiple macOS wants of a blit's
// size, within a buffer of size bytes (a multiple of 16: gpuhost.BufferBytes).
func blitBytes(n, size int) (int, error) {
	m := roundUp(n, 4)
	if n < 0 || m > size {
		return 0, fmt.Errorf("metal: %d bytes do not fit a buffer of %d", n, size)
	}
	return m, nil
}

// writeVia copies src to the start of the private buffer dst (size bytes)
// through a staging buffer.
func writeVia[B any](s stager[B], dst B, size int, src []byte) error {
	return viaStaging(s, len(src), size, func(stg B, mem []byte, n int) error {
		copy(mem, src)
		return s.blit(stg, dst, n)
	})
}

// readVia copies the first len(dst) bytes of the private buffer src (size
// bytes) to dst through a staging buffer.
func readVia[B any](s stager[B], dst []byte, src B, size int) error {
	return viaStaging(s, len(dst), size, func(stg B, mem []byte, n int) error {
		if err := s.blit(src, stg, n); err != nil {
			return err
		}
		copy(dst, mem)
		return nil
	})
}

// viaStaging runs move with a staging buffer of the blit size of length
// bytes within a buffer of size bytes, and releases it after; a length of
// zero moves nothing.
func viaStaging[B any](s stager[B], length, size int, move func(stg B, mem []byte, n int) error) error {
	n, err := blitBytes(length, size)
	if err != nil || n == 0 {
		return err
	}
	stg, mem, err := s.staging(n)
	if err != nil {
		return err
	}
	defer s.release(stg)
	return move(stg, mem, n)
}

// fillWordsVia sets the first words 32-bit words of the private buffer dst
// (size bytes) to word through a staging buffer.
func fillWordsVia[B any](s stager[B], dst B, size int, word uint32, words int) error {
	buf := make([]byte, 4*words)
	gpuhost.FillWords(buf, word)
	return writeVia(s, dst, size, buf)
}
