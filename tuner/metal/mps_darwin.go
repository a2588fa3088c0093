//go:build darwin

package metal

import (
	"fmt"

	"github.com/ebitengine/purego/objc"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/tuner/device"
)

// Baseline is Metal Performance Shaders in the same harness as the
// candidates (D runs per command buffer on rotating copies, up to
// maxInFlight command buffers committed at once), for the families that
// register an
// MPS routine (mps_gemm_darwin.go, mps_gemv_darwin.go):
// MPSMatrixMultiplication for the GEMMs and MPSMatrixVectorMultiplication
// for gemv_nt. MPS's encodeToCommandBuffer: opens its own compute encoder
// for every call, so its runs cannot share the candidates' concurrent
// encoder and no barrier or fence can be put between them: each run is one
// encode, in a command buffer with retained references (MPS may make
// objects only the command buffer keeps alive), and a recorded MPS time
// carries an encoder boundary where a candidate's carries a barrier
// (timingPlan; the facts encoder_launch_us and barrier_launch_us). MPS matrices are row-major, like kerntune's operands, so they
// map directly. Softmax and rmsnorm have no MPS routine of this form: their
// entries are held to the copy bandwidth instead. KERNTUNE_METAL_MPS=0
// turns it off.
//
// bf16 has no MPS baseline: MPSMatrixMultiplication and
// MPSMatrixVectorMultiplication document float32 and float16 matrices;
// MPSDataTypeBFloat16 (macOS 14) is MPSGraph's, and a data type an MPS
// kernel does not take fails an assertion that aborts the process rather
// than returning an error. bf16 entries are held to the rooflines instead.
func (b *Backend) Baseline(k *kernels.Kernel, dt kernels.DType) (device.Program, string, error) {
	encoder, ok := mpsEncoders.Get(k.Name)
	if !b.mpsOK || !ok || dt == kernels.BF16 {
		return nil, "", nil
	}
	m := &mps{b: b, size: dt.Size(), ty: mpsDataTypeFloat32, kernels: map[string]objc.ID{}, wrappers: map[mpsKey]objc.ID{}}
	if dt == kernels.F16 {
		m.ty = mpsDataTypeFloat16
	}
	return newVendor(b, encoder(m), m.free), "mps", nil
}

// mpsEncoder returns the encodeFn of a family's MPS routine, whose MPS
// objects m holds.
type mpsEncoder func(m *mps) encodeFn

// mpsEncoders holds the MPS routine of each family that has one.
var mpsEncoders = kernels.NewTable[mpsEncoder]("MPS baseline")

// mps holds one baseline program's MPS objects, made on the GPU thread on
// first use: kernels by size, and MPSMatrix/MPSVector wrappers of the
// instances' buffers (a wrapper retains its buffer).
type mps struct {
	b        *Backend
	size     int    // bytes per element
	ty       uint32 // MPSDataType
	kernels  map[string]objc.ID
	wrappers map[mpsKey]objc.ID
}

type mpsKey struct {
	buf        objc.ID
	rows, cols int // cols 0: a vector of rows elements
}

func (m *mps) free() {
	for k, id := range m.wrappers {
		release(id)
		delete(m.wrappers, k)
	}
	for k, id := range m.kernels {
		release(id)
		delete(m.kernels, k)
	}
}

// matrix wraps a row-major rows×cols matrix at the start of buf.
func (m *mps) matrix(buf objc.ID, rows, cols int) (objc.ID, error) {
	key := mpsKey{buf, rows, cols}
	if id, ok := m.wrappers[key]; ok {
		return id, nil
	}
	desc := objc.ID(objc.GetClass("MPSMatrixDescriptor")).Send(sel.matrixDescriptor,
		uint64(rows), uint64(cols), uint64(cols*m.size), m.ty) // autoreleased
	if desc == 0 {
		return 0, fmt.Errorf("mps: matrixDescriptorWithRows:%d columns:%d failed", rows, cols)
	}
	id := objc.ID(objc.GetClass("MPSMatrix")).Send(sel.alloc).Send(sel.initWithBuffer, buf, desc)
	if id == 0 {
		return 0, fmt.Errorf("mps: MPSMatrix initWithBuffer for %d×%d failed", rows, cols)
	}
	m.wrappers[key] = id
	return id, nil
}

// vector wraps n elements at the start of buf.
func (m *mps) vector(buf objc.ID, n int) (objc.ID, error) {
	key := mpsKey{buf, n, 0}
	if id, ok := m.wrappers[key]; ok {
		return id, nil
	}
	desc := objc.ID(objc.GetClass("MPSVectorDescriptor")).Send(sel.vectorDescriptor, uint64(n), m.ty)
	if desc == 0 {
		return 0, fmt.Errorf("mps: vectorDescriptorWithLength:%d failed", n)
	}
	id := objc.ID(objc.GetClass("MPSVector")).Send(sel.alloc).Send(sel.initWithBuffer, buf, desc)
	if id == 0 {
		return 0, fmt.Errorf("mps: MPSVector initWithBuffer for %d elements failed", n)
	}
	m.wrappers[key] = id
	return id, nil
}

// matMul returns C = op(A)·B (alpha 1, beta 0) for rows×cols results with
// an interior dimension inner.
func (m *mps) matMul(transLeft bool, rows, cols, inner int) (objc.ID, error) {
	key := fmt.Sprintf("mm/%t/%d/%d/%d", transLeft, rows, cols, inner)
	if id, ok := m.kernels[key]; ok {
		return id, nil
	}
	obj := objc.ID(objc.GetClass("MPSMatrixMultiplication")).Send(sel.alloc)
	id := objc.ID(m.b.rt.sendMatMulInit(uintptr(obj), uintptr(sel.initMatMul), uintptr(m.b.device),
		transLeft, false, uint64(rows), uint64(cols), uint64(inner), 1, 0))
	if id == 0 {
		return 0, fmt.Errorf("mps: MPSMatrixMultiplication init for %d×%d×%d failed", rows, cols, inner)
	}
	m.kernels[key] = id
	return id, nil
}

// matVec returns y = A·x + beta·y for a rows×cols A.
func (m *mps) matVec(rows, cols int, beta float64) (objc.ID, error) {
	key := fmt.Sprintf("mv/%d/%d/%g", rows, cols, beta)
	if id, ok := m.kernels[key]; ok {
		return id, nil
	}
	obj := objc.ID(objc.GetClass("MPSMatrixVectorMultiplication")).Send(sel.alloc)
	id := objc.ID(m.b.rt.sendMatVecInit(uintptr(obj), uintptr(sel.initMatVec), uintptr(m.b.device),
		false, uint64(rows), uint64(cols), 1, beta))
	if id == 0 {
		return 0, fmt.Errorf("mps: MPSMatrixVectorMultiplication init for %d×%d failed", rows, cols)
	}
	m.kernels[key] = id
	return id, nil
}
