package paramfile

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// MaxFileSize is the largest params file the loader reads: 64 MiB. A real
// file is a few kilobytes per device, so a larger one is a mistake (a wrong
// path, a device such as /dev/zero), and reading it whole could exhaust
// memory. The Python loader applies the same limit.
const MaxFileSize = 64 << 20

// ErrTooLarge is wrapped by the error of a file larger than the limit it is
// read with (see ReadFileLimit).
var ErrTooLarge = errors.New("file too large")

// ErrNotRegular is wrapped by WriteFileAtomic's error for a path that
// exists and is not a regular file (a device, a pipe, a directory), which
// a rename would replace.
var ErrNotRegular = errors.New("not a regular file")

// TooLargeError is a file that holds more than the limit it was read with.
type TooLargeError struct {
	Path  string
	Limit int64
	// Regular is false for a device, pipe or other non-regular file, of
	// which only Limit+1 bytes were read.
	Regular bool
}

func (e *TooLargeError) Error() string {
	if e.Regular {
		return fmt.Sprintf("%s: larger than %s", e.Path, SizeString(e.Limit))
	}
	return fmt.Sprintf("%s: not a regular file, and it yields more than %s", e.Path, SizeString(e.Limit))
}

func (e *TooLargeError) Unwrap() error { return ErrTooLarge }

// SizeString writes a byte count in the largest binary unit that divides
// it (64 MiB, 1 GiB, 1500 bytes).
func SizeString(n int64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// ReadFileLimit reads the file at path when it holds at most limit bytes.
// A regular file larger than that is refused before it is read; from any
// other file (a device such as /dev/zero, a pipe) at most limit+1 bytes
// are read. Either way the error is a *TooLargeError (errors.Is
// ErrTooLarge). A missing file satisfies errors.Is(err, fs.ErrNotExist).
func ReadFileLimit(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	regular := st.Mode().IsRegular()
	if regular && st.Size() > limit {
		return nil, &TooLargeError{Path: path, Limit: limit, Regular: true}
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Path: path, Limit: limit, Regular: regular}
	}
	return data, nil
}

// ReadParams reads a params file within MaxFileSize; a larger one is a
// *PathError naming the file and the limit.
func ReadParams(path string) ([]byte, error) {
	data, err := ReadFileLimit(path, MaxFileSize)
	var tl *TooLargeError
	if errors.As(err, &tl) {
		return nil, &PathError{File: path, Msg: tl.Reason("a params file")}
	}
	return data, err
}

// Reason says what is wrong without the file name, for errors that name
// it themselves: "larger than 64 MiB, the limit of " + what. The Python
// loader writes the same.
func (e *TooLargeError) Reason(what string) string {
	lead := "larger"
	if !e.Regular {
		lead = "not a regular file, and it yields more"
	}
	return fmt.Sprintf("%s than %s, the limit of %s", lead, SizeString(e.Limit), what)
}

// fileKind names the kind of a file that is not regular, for errors.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return "an irregular file"
}

// CheckRegular returns an error wrapping ErrNotRegular when path exists and
// is not a regular file, naming what it is; nil when it is one or does not
// exist. Commands check an output path with it before any work.
func CheckRegular(path string) error {
	st, err := os.Stat(path)
	if err != nil || st.Mode().IsRegular() {
		return nil
	}
	return fmt.Errorf("%s is %s, %w", path, fileKind(st.Mode()), ErrNotRegular)
}
