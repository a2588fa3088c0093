package cldrv

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// Context is an OpenCL context on one device with one in-order command
// queue that records profiling timestamps.
type Context struct {
	l     *Lib
	dev   Device
	ctx   uintptr
	queue uintptr
}

// NewContext creates a context and a profiling queue on d.
func (l *Lib) NewContext(d Device) (*Context, error) {
	var r int32
	dev := uintptr(d)
	ctx := l.f.clCreateContext(nil, 1, &dev, 0, 0, &r)
	if err := check("clCreateContext", r); err != nil {
		return nil, err
	}
	q := l.f.clCreateCommandQueue(ctx, dev, queueProfilingEnable, &r)
	if err := check("clCreateCommandQueue", r); err != nil {
		l.f.clReleaseContext(ctx)
		return nil, err
	}
	return &Context{l: l, dev: d, ctx: ctx, queue: q}, nil
}

// Close waits for the queue and releases it and the context.
func (c *Context) Close() error {
	if c.ctx == 0 {
		return nil
	}
	err := errors.Join(
		check("clFinish", c.l.f.clFinish(c.queue)),
		check("clReleaseCommandQueue", c.l.f.clReleaseCommandQueue(c.queue)),
		check("clReleaseContext", c.l.f.clReleaseContext(c.ctx)))
	c.ctx, c.queue = 0, 0
	return err
}

// Buffer is a cl_mem.
type Buffer uintptr

// Alloc creates a read-write buffer of n bytes (at least one).
func (c *Context) Alloc(n int) (Buffer, error) {
	var r int32
	m := c.l.f.clCreateBuffer(c.ctx, memReadWrite, uintptr(max(n, 1)), nil, &r)
	if err := check("clCreateBuffer", r); err != nil {
		return 0, fmt.Errorf("%w (%d bytes)", err, n)
	}
	return Buffer(m), nil
}

// Free releases a buffer.
func (c *Context) Free(b Buffer) error {
	return check("clReleaseMemObject", c.l.f.clReleaseMemObject(uintptr(b)))
}

// Write copies host bytes into the start of b and waits.
func (c *Context) Write(b Buffer, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	r := c.l.f.clEnqueueWriteBuffer(c.queue, uintptr(b), clTrue, 0, uintptr(len(src)), unsafe.Pointer(&src[0]), 0, nil, nil)
	runtime.KeepAlive(src)
	return check("clEnqueueWriteBuffer", r)
}

// Read copies the start of b into dst and waits.
func (c *Context) Read(dst []byte, b Buffer) error {
	if len(dst) == 0 {
		return nil
	}
	r := c.l.f.clEnqueueReadBuffer(c.queue, uintptr(b), clTrue, 0, uintptr(len(dst)), unsafe.Pointer(&dst[0]), 0, nil, nil)
	runtime.KeepAlive(dst)
	return check("clEnqueueReadBuffer", r)
}

// Fill32 enqueues filling the first 4·words bytes of b with a 32-bit pattern.
func (c *Context) Fill32(b Buffer, pattern uint32, words int) error {
	p := pattern
	r := c.l.f.clEnqueueFillBuffer(c.queue, uintptr(b), unsafe.Pointer(&p), 4, 0, uintptr(4*words), 0, nil, nil)
	runtime.KeepAlive(&p)
	return check("clEnqueueFillBuffer", r)
}

// Finish waits until the queue is empty.
func (c *Context) Finish() error { return check("clFinish", c.l.f.clFinish(c.queue)) }

// Program is a program built for the context's device.
type Program struct {
	c *Context
	h uintptr
}

// Build compiles OpenCL C source for the device. On a build failure the
// error is an *Error whose Log is the compiler's build log.
func (c *Context) Build(src, options string) (*Program, error) {
	var r int32
	s := cstr(src)
	sp := &s[0]
	n := uintptr(len(src))
	h := c.l.f.clCreateProgramWithSource(c.ctx, 1, &sp, &n, &r)
	runtime.KeepAlive(s)
	if err := check("clCreateProgramWithSource", r); err != nil {
		return nil, err
	}
	return c.buildProgram(h, options)
}

// buildProgram builds a created program for the device; on failure it
// releases it and returns an *Error with the build log.
func (c *Context) buildProgram(h uintptr, options string) (*Program, error) {
	opts := cstr(options)
	dev := uintptr(c.dev)
	r := c.l.f.clBuildProgram(h, 1, &dev, &opts[0], 0, 0)
	runtime.KeepAlive(opts)
	if r != clSuccess {
		e := &Error{Call: "clBuildProgram", Code: r}
		e.Log, _ = infoString("clGetProgramBuildInfo", func(size uintptr, v unsafe.Pointer, ret *uintptr) int32 {
			return c.l.f.clGetProgramBuildInfo(h, dev, programBuildLog, size, v, ret)
		})
		c.l.f.clReleaseProgram(h)
		return nil, e
	}
	return &Program{c: c, h: h}, nil
}

// Release frees the program.
func (p *Program) Release() error {
	return release(&p.h, "clReleaseProgram", p.c.l.f.clReleaseProgram)
}

// release frees the object *h with free and clears *h, so that a second
// release reports errReleased instead of freeing a stale handle.
func release(h *uintptr, call string, free func(uintptr) int32) error {
	if *h == 0 {
		return errReleased
	}
	err := check(call, free(*h))
	*h = 0
	return err
}

// Kernel is one kernel of a program. Its argument setting and launches are
// serialised: clSetKernelArg is not thread-safe on one kernel.
type Kernel struct {
	c    *Context
	h    uintptr
	Name string
	mu   sync.Mutex
}

// Kernel creates the named kernel of p.
func (p *Program) Kernel(name string) (*Kernel, error) {
	var r int32
	n := cstr(name)
	h := p.c.l.f.clCreateKernel(p.h, &n[0], &r)
	runtime.KeepAlive(n)
	if err := check("clCreateKernel", r); err != nil {
		return nil, fmt.Errorf("%w (kernel %s)", err, name)
	}
	return &Kernel{c: p.c, h: h, Name: name}, nil
}

// Release frees the kernel.
func (k *Kernel) Release() error {
	return release(&k.h, "clReleaseKernel", k.c.l.f.clReleaseKernel)
}

// WorkGroupInfo is what the device can run of a built kernel.
type WorkGroupInfo struct {
	MaxWorkGroupSize int   // CL_KERNEL_WORK_GROUP_SIZE
	LocalMemBytes    int64 // CL_KERNEL_LOCAL_MEM_SIZE
}

// WorkGroupInfo queries the kernel's limits on the context's device.
func (k *Kernel) WorkGroupInfo() (WorkGroupInfo, error) {
	var wg uintptr
	var lm uint64
	f := k.c.l.f.clGetKernelWorkGroupInfo
	if err := check("clGetKernelWorkGroupInfo", f(k.h, uintptr(k.c.dev), kernelWorkGroupSize, unsafe.Sizeof(wg), unsafe.Pointer(&wg), nil)); err != nil {
		return WorkGroupInfo{}, err
	}
	if err := check("clGetKernelWorkGroupInfo", f(k.h, uintptr(k.c.dev), kernelLocalMemSize, 8, unsafe.Pointer(&lm), nil)); err != nil {
		return WorkGroupInfo{}, err
	}
	return WorkGroupInfo{MaxWorkGroupSize: int(wg), LocalMemBytes: int64(lm)}, nil
}

// Event is a cl_event of a launch.
type Event uintptr

// Launch sets the arguments (Buffer, int32, uint32 or float32) and enqueues
// the kernel over groups[0]×groups[1] work-groups of local[0]×local[1]
// work-items. With event it returns the launch's event, which the caller
// must release (Times does).
func (k *Kernel) Launch(groups, local [2]int, event bool, args ...any) (Event, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for i, a := range args {
		var r int32
		switch v := a.(type) {
		case Buffer:
			h := uintptr(v)
			r = k.c.l.f.clSetKernelArg(k.h, uint32(i), unsafe.Sizeof(h), unsafe.Pointer(&h))
		case int32:
			r = k.c.l.f.clSetKernelArg(k.h, uint32(i), 4, unsafe.Pointer(&v))
		case uint32:
			r = k.c.l.f.clSetKernelArg(k.h, uint32(i), 4, unsafe.Pointer(&v))
		case float32:
			r = k.c.l.f.clSetKernelArg(k.h, uint32(i), 4, unsafe.Pointer(&v))
		default:
			return 0, fmt.Errorf("cldrv: kernel %s argument %d has unsupported type %T (allowed: Buffer, int32, uint32, float32)", k.Name, i, a)
		}
		if err := check("clSetKernelArg", r); err != nil {
			return 0, fmt.Errorf("%w (kernel %s, argument %d)", err, k.Name, i)
		}
	}
	global := [2]uintptr{uintptr(groups[0] * local[0]), uintptr(groups[1] * local[1])}
	loc := [2]uintptr{uintptr(local[0]), uintptr(local[1])}
	var ev uintptr
	var evp *uintptr
	if event {
		evp = &ev
	}
	r := k.c.l.f.clEnqueueNDRangeKernel(k.c.queue, k.h, 2, nil, &global[0], &loc[0], 0, nil, evp)
	if err := check("clEnqueueNDRangeKernel", r); err != nil {
		return 0, fmt.Errorf("%w (kernel %s, %v groups of %v)", err, k.Name, groups, local)
	}
	return Event(ev), nil
}

// Spans waits for the events, taken in pairs (the first and the last
// command of a run of commands in the in-order queue), and returns each
// pair's device time from the first's start to the last's end
// (CL_PROFILING_COMMAND_START of the first, CL_PROFILING_COMMAND_END of the
// last) in seconds; a pair may be one event twice. It releases the events.
func (c *Context) Spans(pairs [][2]Event) ([]float64, error) {
	var evs []Event
	for _, p := range pairs {
		evs = append(evs, p[0])
		if p[1] != p[0] {
			evs = append(evs, p[1])
		}
	}
	defer func() {
		for _, e := range evs {
			c.l.f.clReleaseEvent(uintptr(e))
		}
	}()
	if len(evs) == 0 {
		return nil, nil
	}
	hs := make([]uintptr, len(evs))
	for i, e := range evs {
		hs[i] = uintptr(e)
	}
	if err := check("clWaitForEvents", c.l.f.clWaitForEvents(uint32(len(hs)), &hs[0])); err != nil {
		return nil, err
	}
	secs := make([]float64, len(pairs))
	for i, p := range pairs {
		var start, end uint64
		if err := check("clGetEventProfilingInfo", c.l.f.clGetEventProfilingInfo(uintptr(p[0]), profilingCommandStart, 8, unsafe.Pointer(&start), nil)); err != nil {
			return nil, err
		}
		if err := check("clGetEventProfilingInfo", c.l.f.clGetEventProfilingInfo(uintptr(p[1]), profilingCommandEnd, 8, unsafe.Pointer(&end), nil)); err != nil {
			return nil, err
		}
		if end < start {
			return nil, fmt.Errorf("cldrv: run %d ends (%d ns) before it starts (%d ns)", i, end, start)
		}
		secs[i] = float64(end-start) / 1e9
	}
	return secs, nil
}

// Times waits for the events and returns each one's device execution time
// (CL_PROFILING_COMMAND_END − START) in seconds; it releases the events.
func (c *Context) Times(evs []Event) ([]float64, error) {
	pairs := make([][2]Event, len(evs))
	for i, e := range evs {
		pairs[i] = [2]Event{e, e}
	}
	return c.Spans(pairs)
}
