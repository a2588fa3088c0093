//go:build darwin

package metal

import (
	"errors"

	"github.com/ebitengine/purego/objc"
)

// metalAPI is the timing plan's Metal (timingAPI): command buffers and
// compute encoders are objc.IDs, and the calls made once a run or more
// often go through the fixed-arity sends (msg0, msg1). GPU thread.
type metalAPI struct{ b *Backend }

var _ timingAPI[objc.ID, objc.ID] = metalAPI{}

// commandBuffer returns a command buffer the caller owns (+1: the queue
// returns it autoreleased, and it must outlive the autorelease pool it
// was made in while it is in flight).
func (a metalAPI) commandBuffer(retained bool) (objc.ID, error) {
	r, q := a.b.rt, uintptr(a.b.queue)
	var cb uintptr
	if retained {
		cb = r.msg0(q, uintptr(sel.commandBuffer))
	} else {
		cb = r.msg0(q, uintptr(sel.commandBufferUnretained))
	}
	if cb == 0 {
		return 0, errors.New("metal: the command queue returned no command buffer")
	}
	r.msg0(cb, uintptr(sel.retain))
	return objc.ID(cb), nil
}

func (a metalAPI) concurrentEncoder(cb objc.ID) (objc.ID, error) {
	e := a.b.rt.msg1(uintptr(cb), uintptr(sel.concurrentEncoder), mtlDispatchTypeConcurrent)
	if e == 0 {
		return 0, errors.New("metal: computeCommandEncoderWithDispatchType:MTLDispatchTypeConcurrent returned nil")
	}
	return objc.ID(e), nil
}

func (a metalAPI) barrier(e objc.ID) {
	a.b.rt.msg1(uintptr(e), uintptr(sel.barrier), mtlBarrierScopeBuffers)
}

func (a metalAPI) waitFence(e objc.ID, slot int) {
	a.b.rt.msg1(uintptr(e), uintptr(sel.waitForFence), uintptr(a.b.fences[slot]))
}

func (a metalAPI) updateFence(e objc.ID, slot int) {
	a.b.rt.msg1(uintptr(e), uintptr(sel.updateFence), uintptr(a.b.fences[slot]))
}

func (a metalAPI) endEncoding(e objc.ID) { a.b.rt.msg0(uintptr(e), uintptr(sel.endEncoding)) }
func (a metalAPI) commit(cb objc.ID)     { a.b.rt.msg0(uintptr(cb), uintptr(sel.commit)) }
func (a metalAPI) wait(cb objc.ID)       { a.b.rt.msg0(uintptr(cb), uintptr(sel.waitUntilCompleted)) }

func (a metalAPI) status(cb objc.ID) int {
	return int(a.b.rt.msg0(uintptr(cb), uintptr(sel.status)))
}

func (a metalAPI) errorText(cb objc.ID) string {
	return a.b.rt.errorText(objc.ID(a.b.rt.msg0(uintptr(cb), uintptr(sel.err))))
}

func (a metalAPI) gpuTimes(cb objc.ID) (start, end float64) {
	r := a.b.rt
	return r.sendDouble(uintptr(cb), uintptr(sel.gpuStartTime)), r.sendDouble(uintptr(cb), uintptr(sel.gpuEndTime))
}

func (a metalAPI) release(cb objc.ID) { a.b.rt.msg0(uintptr(cb), uintptr(sel.release)) }
