// Package compilecache keeps compiled kernels (CUDA images, OpenCL program
// binaries) on disk between runs, so that a second tuning run of a device
// compiles nothing the first one compiled.
//
// An entry's name is the SHA-256 of its Key: everything that changes the
// binary (the API, the source text, the compile options, the compiler and
// driver versions, the device and its architecture) and the format
// version. An entry file holds a header (magic, format version, the key's
// hash, the payload's length and SHA-256) and the payload; Load checks all
// of them and deletes an entry that fails, so a corrupt or truncated entry
// is rebuilt, never loaded. Entries are written to a temporary file in the
// directory and renamed into place, so a reader sees a whole entry or none,
// and two runs may share the directory.
//
// A cached binary is code that runs: the directory is made private to the
// user (0700), and an entry that is not a regular file owned by the user,
// or that others may write, is never loaded.
//
// The directory is bounded in size: after a store pushes it past the
// bound, the least recently used entries (by modification time, which a
// hit refreshes) are removed until it is back under it.
//
// The environment configures the default cache (Default):
// KERNTUNE_NO_CACHE=1 turns it off, KERNTUNE_CACHE_DIR moves it,
// KERNTUNE_CACHE_MAX bounds it ("512MiB", "2GiB", or bytes).
//
// It imports only the standard library.
package compilecache
