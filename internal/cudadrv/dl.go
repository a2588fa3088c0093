package cudadrv

import "github.com/kerntune/kerntune/internal/dl"

// The loader is shared with the other driver bindings (internal/dl).
const dlSupported = dl.Supported

func dlopen(path string) (uintptr, error)           { return dl.Open(path) }
func dlsym(h uintptr, name string) (uintptr, error) { return dl.Sym(h, name) }
func registerFunc(fptr any, addr uintptr) error     { return dl.Register(fptr, addr) }
