package compilecache

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
)

// formatVersion changes whenever the entry layout or the meaning of a Key
// field changes; entries of another version are never found.
const formatVersion = 1

// Key is everything that changes a compiled binary. Two compiles with the
// same Key make interchangeable binaries.
type Key struct {
	API      string // "cuda", "opencl"
	Source   string // the source text compiled
	Options  string // compile options and the source's name, as passed
	Compiler string // compiler and its version ("nvrtc 12.4", the OpenCL platform and C version)
	Driver   string // driver version
	Device   string // device name
	Arch     string // architecture or compute capability ("sm_90")
}

// sum is the key's SHA-256: each field is length-prefixed, so that no two
// different keys hash the same bytes.
func (k Key) sum() [sha256.Size]byte {
	h := sha256.New()
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], formatVersion)
	h.Write(n[:])
	for _, f := range []string{k.API, k.Source, k.Options, k.Compiler, k.Driver, k.Device, k.Arch} {
		binary.LittleEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write([]byte(f))
	}
	var s [sha256.Size]byte
	h.Sum(s[:0])
	return s
}

// name is the entry's file name.
func (k Key) name() string {
	s := k.sum()
	return hex.EncodeToString(s[:]) + entryExt
}
