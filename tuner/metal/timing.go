package metal

import (
	"fmt"
	"strconv"
	"strings"
)

// The timing path: how a timed sample is encoded, committed and read back.
// The plan (which calls, in which order, with which arguments) is here,
// without a build constraint, and tested with a recording stand-in for
// Metal (timing_test.go); the darwin code supplies the Objective-C calls
// (metalAPI, program_darwin.go).
//
// A candidate's sample is encoded as MLX encodes a stream of kernels
// (mlx/backend/metal/device.cpp, CommandEncoder): D dispatches in one
// concurrent compute encoder of one command buffer made with unretained
// references, over buffers allocated untracked (MLX's allocator.cpp), a
// buffer-scope memory barrier between consecutive dispatches, and D at most
// MLX's dispatches per command buffer for the device's class. Up to
// maxInFlight command buffers are committed before the oldest is waited
// for, so the GPU runs one while the next is encoded.

// Metal enumerations of the timing path (MTLCommandBuffer.h,
// MTLComputeCommandEncoder.h, MTLResource.h).
const (
	mtlCommandBufferStatusCompleted = 4 // MTLCommandBufferStatusCompleted
	mtlCommandBufferStatusError     = 5 // MTLCommandBufferStatusError
	mtlDispatchTypeConcurrent       = 1 // MTLDispatchTypeConcurrent
	mtlBarrierScopeBuffers          = 1 // MTLBarrierScopeBuffers
	// MTLResourceHazardTrackingModeUntracked: MTLHazardTrackingModeUntracked
	// (1) << MTLResourceHazardTrackingModeShift (8).
	mtlResourceHazardTrackingModeUntracked = 1 << 8
)

// maxInFlight is how many timed command buffers are committed and not yet
// waited for: the next is committed before the previous is waited for, so
// the GPU never waits on the host's encoding.
const maxInFlight = 3

// timingAPI is what the timing path asks of Metal. C is a command buffer
// and E a compute encoder (objc.ID on darwin; the test's stand-in records
// the calls).
type timingAPI[C, E any] interface {
	// commandBuffer makes a command buffer of the backend's queue, owned
	// by the caller until release: with unretained references
	// (commandBufferWithUnretainedReferences, as MLX makes them), or,
	// with retained, one that keeps what it uses alive (commandBuffer:
	// for MPS, which may make objects only the command buffer holds).
	commandBuffer(retained bool) (C, error)
	// concurrentEncoder begins a compute encoder whose dispatches may run
	// concurrently (computeCommandEncoderWithDispatchType:
	// MTLDispatchTypeConcurrent).
	concurrentEncoder(cb C) (E, error)
	barrier(e E) // memoryBarrierWithScope:MTLBarrierScopeBuffers
	// waitFence and updateFence send waitForFence: and updateFence: with
	// one of the backend's two timing fences (slot 0 or 1).
	waitFence(e E, slot int)
	updateFence(e E, slot int)
	endEncoding(e E)
	commit(cb C)
	wait(cb C)                          // waitUntilCompleted
	status(cb C) int                    // MTLCommandBufferStatus
	errorText(cb C) string              // the command buffer's NSError, described
	gpuTimes(cb C) (start, end float64) // GPUStartTime, GPUEndTime
	release(cb C)
}

// timingPlan encodes a program's runs. Exactly one of dispatch and vendor
// is set.
type timingPlan[C, E any] struct {
	api timingAPI[C, E]
	// dispatch encodes one run of a compiled candidate on input copy cp
	// into an open compute encoder: pipeline, arguments, dispatch.
	dispatch func(e E, cp int) error
	// vendor encodes one run of a vendor routine (MPS) on input copy cp
	// into a command buffer, in compute encoders it begins and ends
	// itself: MPS's encodeToCommandBuffer: takes a command buffer, never an
	// encoder, so its runs cannot share one, and no barrier or fence can be
	// put into them.
	vendor func(cb C, cp int) error
}

// encode makes a command buffer holding one run per input copy in copies,
// the i-th of a timing. A candidate's runs share one concurrent encoder,
// which updates fence i%2 when its runs are done and, from the second
// command buffer on, first waits for fence (i-1)%2, which the previous
// command buffer's encoder updated: the command buffers of one timing run
// one after the other, as dependent kernels do (MLX makes an encoder wait
// for the fence of an earlier one whose outputs it binds; untracked
// buffers get no ordering from Metal between encoders). Two fences, so
// that no encoder waits for the fence it updates.
func (p timingPlan[C, E]) encode(copies []int, i int) (C, error) {
	cb, err := p.api.commandBuffer(p.vendor != nil)
	if err != nil {
		var none C
		return none, err
	}
	if err := p.encodeInto(cb, copies, i); err != nil {
		p.api.release(cb) // never committed
		var none C
		return none, err
	}
	return cb, nil
}

func (p timingPlan[C, E]) encodeInto(cb C, copies []int, i int) error {
	if p.vendor != nil {
		for i, cp := range copies {
			if err := p.vendor(cb, cp); err != nil {
				return fmt.Errorf("run %d of %d (input copy %d): %w", i+1, len(copies), cp, err)
			}
		}
		return nil
	}
	e, err := p.api.concurrentEncoder(cb)
	if err != nil {
		return err
	}
	if i > 0 {
		p.api.waitFence(e, (i-1)%2)
	}
	for j, cp := range copies {
		if j > 0 {
			// Every run writes the same output, so each dispatch after the
			// first writes what the one before it wrote: a write after a
			// write, the dependency here. MLX barriers before a dispatch
			// one of whose inputs is a previous dispatch's output, and
			// records outputs as inputs too (set_output_array), so it
			// barriers here as well; without the barrier the concurrent
			// encoder would overlap the runs, which no chain of dependent
			// kernels in an application allows.
			p.api.barrier(e)
		}
		if err := p.dispatch(e, cp); err != nil {
			p.api.endEncoding(e) // an encoder must end before its command buffer goes
			return fmt.Errorf("run %d of %d (input copy %d): %w", j+1, len(copies), cp, err)
		}
	}
	p.api.updateFence(e, i%2)
	p.api.endEncoding(e)
	return nil
}

// finish waits for a committed command buffer and returns its GPU time,
// clipped to start no earlier than after (the previous command buffer's
// end: if Metal starts a command buffer while its encoder waits for the
// fence, that wait is not the sample's), and its end. A command buffer
// that did not complete is an error naming its status and Metal's error;
// with timed false the timestamps are not read.
func (p timingPlan[C, E]) finish(cb C, after float64, timed bool) (secs, end float64, err error) {
	p.api.wait(cb)
	if st := p.api.status(cb); st != mtlCommandBufferStatusCompleted {
		return 0, 0, fmt.Errorf("command buffer failed (%s): %s", commandBufferStatus(st), p.api.errorText(cb))
	}
	if !timed {
		return 0, 0, nil
	}
	start, end := p.api.gpuTimes(cb)
	if after > start {
		start = after
	}
	secs, err = gpuElapsed(start, end)
	return secs, end, err
}

// once encodes one command buffer of runs on copies, commits it, waits for
// it and returns its GPU time (with timed; otherwise 0 and its timestamps
// are not checked).
func (p timingPlan[C, E]) once(copies []int, timed bool) (float64, error) {
	cb, err := p.encode(copies, 0)
	if err != nil {
		return 0, fmt.Errorf("metal: encoding %d runs: %w", len(copies), err)
	}
	p.api.commit(cb)
	secs, _, err := p.finish(cb, 0, timed)
	p.api.release(cb)
	if err != nil {
		return 0, fmt.Errorf("metal: %d runs: %w", len(copies), err)
	}
	return secs, nil
}

// samples times n samples of d runs each, the input copies of each sample
// from take: one command buffer a sample, at most maxInFlight committed and
// not yet waited for; a sample is its command buffer's GPU time divided by
// d. On an error the command buffers already committed are waited for
// (they use buffers the caller may free once this returns) and the first
// error is returned, naming the sample.
func (p timingPlan[C, E]) samples(n, d int, take func(int) []int) ([]float64, error) {
	if n < 0 || d < 1 {
		return nil, fmt.Errorf("metal: %d samples of %d runs: want n ≥ 0 and d ≥ 1", n, d)
	}
	secs := make([]float64, 0, n)
	type inFlight struct {
		cb C
		i  int
	}
	var pending []inFlight
	var first error
	var lastEnd float64
	finishOldest := func() {
		f := pending[0]
		pending = pending[1:]
		t, end, err := p.finish(f.cb, lastEnd, true)
		p.api.release(f.cb)
		if first != nil {
			return
		}
		if err != nil {
			first = fmt.Errorf("metal: sample %d of %d (a command buffer of %d runs): %w", f.i+1, n, d, err)
			return
		}
		secs = append(secs, t/float64(d))
		lastEnd = end
	}
	for i := 0; i < n && first == nil; i++ {
		cb, err := p.encode(take(d), i)
		if err != nil {
			first = fmt.Errorf("metal: encoding sample %d of %d (%d runs): %w", i+1, n, d, err)
			break
		}
		p.api.commit(cb)
		pending = append(pending, inFlight{cb, i})
		if len(pending) == maxInFlight {
			finishOldest()
		}
	}
	for len(pending) > 0 {
		finishOldest()
	}
	if first != nil {
		return nil, first
	}
	return secs, nil
}

// commandBufferStatus names an MTLCommandBufferStatus.
func commandBufferStatus(st int) string {
	names := []string{"NotEnqueued", "Enqueued", "Committed", "Scheduled", "Completed", "Error"}
	if st >= 0 && st < len(names) {
		return "MTLCommandBufferStatus" + names[st]
	}
	return fmt.Sprintf("MTLCommandBufferStatus %d", st)
}

// mlxOpsEnv is the environment variable MLX reads its dispatches per
// command buffer from; the backend honours it the same way, so that a run
// under an MLX application's setting times what that application runs.
const mlxOpsEnv = "MLX_MAX_OPS_PER_BUFFER"

// mlxOpsPerBuffer is MLX's default number of dispatches per command buffer
// on a device (mlx/backend/metal/device.cpp, Device::Device), by the last
// letter of the GPU's architecture name (-[MTLDevice architecture].name,
// e.g. "applegpu_g13s"): 'p' (phone) 20, 'g' (base and Pro) 40, 's' (Max)
// 50, 'd' (Ultra) 50, anything else 40. Without an architecture name (a
// macOS before 14) the class is read from the device's name: "Ultra" 'd',
// "Max" 's', otherwise 'g'.
func mlxOpsPerBuffer(arch, name string) int {
	class := byte('g')
	switch {
	case arch != "":
		class = arch[len(arch)-1]
	case strings.Contains(name, "Ultra"):
		class = 'd'
	case strings.Contains(name, "Max"):
		class = 's'
	}
	switch class {
	case 'p':
		return 20
	case 's', 'd':
		return 50
	default:
		return 40
	}
}

// mlxOpsOverride parses MLX_MAX_OPS_PER_BUFFER's value: ok is false when
// it is unset (empty).
func mlxOpsOverride(v string) (ops int, ok bool, err error) {
	if v == "" {
		return 0, false, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 {
		return 0, false, fmt.Errorf("metal: %s=%q: want a positive integer (MLX's dispatches per command buffer)", mlxOpsEnv, v)
	}
	return n, true, nil
}

// runsLimit is the most runs a timed command buffer holds: MLX's
// dispatches per command buffer for the device (or MLX_MAX_OPS_PER_BUFFER),
// and never more than maxDispatches.
func runsLimit(arch, name, env string) (int, error) {
	n, ok, err := mlxOpsOverride(env)
	if err != nil {
		return 0, err
	}
	if !ok {
		n = mlxOpsPerBuffer(arch, name)
	}
	return min(n, maxDispatches), nil
}
