//go:build !(linux || darwin)

package cldrv

import (
	"errors"
	"runtime"
)

const dlSupported = false

var errNoDL = errors.New("cldrv: loading shared libraries is not supported on " + runtime.GOOS)

func dlopen(path string) (uintptr, error)             { return 0, errNoDL }
func dlsym(h uintptr, name string) (uintptr, error)   { return 0, errNoDL }
func registerFunc(fptr any, addr uintptr) (err error) { return errNoDL }
