//go:build linux || darwin

package cldrv

import (
	"fmt"

	"github.com/ebitengine/purego"
)

// dlSupported reports whether this platform can load shared libraries.
const dlSupported = true

// dlopen opens a shared library with immediate binding and local symbols.
func dlopen(path string) (uintptr, error) {
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return 0, err
	}
	return h, nil
}

// dlsym looks up a symbol.
func dlsym(h uintptr, name string) (uintptr, error) {
	return purego.Dlsym(h, name)
}

// registerFunc makes fptr (a pointer to a Go func variable) call the C
// function at addr. purego panics on an unsupported signature, which is a
// programming error in this package; it is turned into an error anyway.
func registerFunc(fptr any, addr uintptr) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("purego.RegisterFunc: %v", r)
		}
	}()
	purego.RegisterFunc(fptr, addr)
	return nil
}
