//go:build linux || darwin

package dl

import (
	"fmt"

	"github.com/ebitengine/purego"
)

// Supported reports whether this platform can load shared libraries.
const Supported = true

// Open opens a shared library with immediate binding and local symbols.
func Open(path string) (uintptr, error) {
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return 0, err
	}
	return h, nil
}

// Sym looks up a symbol.
func Sym(h uintptr, name string) (uintptr, error) {
	return purego.Dlsym(h, name)
}

// Register makes fptr (a pointer to a Go func variable) call the C function
// at addr. purego panics on an unsupported signature, which is a programming
// error in the binding; it is turned into an error anyway.
func Register(fptr any, addr uintptr) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("purego.RegisterFunc: %v", r)
		}
	}()
	purego.RegisterFunc(fptr, addr)
	return nil
}
