//go:build !(linux || darwin)

package dl

import (
	"errors"
	"runtime"
)

// Supported reports whether this platform can load shared libraries.
const Supported = false

var errNoDL = errors.New("loading shared libraries is not supported on " + runtime.GOOS)

// Open fails: no shared libraries here.
func Open(path string) (uintptr, error) { return 0, errNoDL }

// Sym fails: no shared libraries here.
func Sym(h uintptr, name string) (uintptr, error) { return 0, errNoDL }

// Register fails: no shared libraries here.
func Register(fptr any, addr uintptr) error { return errNoDL }
