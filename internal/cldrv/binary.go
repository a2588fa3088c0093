package cldrv

import (
	"fmt"
	"runtime"
	"unsafe"
)

// Constants from CL/cl.h for program binaries.
const (
	programBinarySizes = 0x1165
	programBinaries    = 0x1166
)

// Binary returns the program's binary for the context's device
// (CL_PROGRAM_BINARIES), which BuildBinary loads again without compiling
// the source.
func (p *Program) Binary() ([]byte, error) {
	if p.h == 0 {
		return nil, errReleased
	}
	f := &p.c.l.f
	// The program is built for one device: one size, one binary.
	var size uintptr
	if err := check("clGetProgramInfo", f.clGetProgramInfo(p.h, programBinarySizes, unsafe.Sizeof(size), unsafe.Pointer(&size), nil)); err != nil {
		return nil, fmt.Errorf("%w (binary size)", err)
	}
	if size == 0 {
		return nil, fmt.Errorf("clGetProgramInfo: the device gives no program binary")
	}
	buf := make([]byte, size)
	ptrs := []*byte{&buf[0]}
	r := f.clGetProgramInfo(p.h, programBinaries, unsafe.Sizeof(ptrs[0]), unsafe.Pointer(&ptrs[0]), nil)
	runtime.KeepAlive(buf)
	runtime.KeepAlive(ptrs)
	if err := check("clGetProgramInfo", r); err != nil {
		return nil, fmt.Errorf("%w (binary)", err)
	}
	return buf, nil
}

// BuildBinary creates a program from a binary that Program.Binary gave
// for this device and builds it with options. A binary the device
// refuses is an error (an *Error with the build log where there is one):
// the caller builds from source instead.
func (c *Context) BuildBinary(bin []byte, options string) (*Program, error) {
	if len(bin) == 0 {
		return nil, fmt.Errorf("clCreateProgramWithBinary: empty binary")
	}
	dev := uintptr(c.dev)
	n := uintptr(len(bin))
	bp := &bin[0]
	var status, r int32
	h := c.l.f.clCreateProgramWithBinary(c.ctx, 1, &dev, &n, &bp, &status, &r)
	runtime.KeepAlive(bin)
	if err := check("clCreateProgramWithBinary", r); err != nil {
		return nil, err
	}
	if err := check("clCreateProgramWithBinary (binary status)", status); err != nil {
		if rerr := check("clReleaseProgram", c.l.f.clReleaseProgram(h)); rerr != nil {
			return nil, fmt.Errorf("%w; releasing it: %v", err, rerr)
		}
		return nil, err
	}
	return c.buildProgram(h, options)
}
