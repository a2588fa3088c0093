package cuda

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/kerntune/kerntune/internal/cudadrv"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/tuner/device"
	"github.com/kerntune/kerntune/tuner/internal/gpuhost"
)

var _ device.SampledOutputer = (*program)(nil)

// sampleKernels, loaded with the helper kernels, check a large output
// where it is (device.SampledOutputer): the index of its first element that
// is not finite (NaN, the poison, or an infinity: exponent bits all ones),
// and the sample's rows gathered into one small buffer. Only those cross to the host: for softmax 32768×1024
// f32 that is about 1 MB instead of 128 MB, and no float64 scan of the
// whole output on the host.
const sampleKernels = `
extern "C" __global__ void kt_first_bad32(const unsigned int* out, long long n, unsigned long long* first) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    if ((out[i] & 0x7f800000u) == 0x7f800000u) { atomicMin(first, (unsigned long long)i); return; }
  }
}
extern "C" __global__ void kt_first_bad16(const unsigned short* out, long long n, unsigned long long* first) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    if ((out[i] & 0x7c00u) == 0x7c00u) { atomicMin(first, (unsigned long long)i); return; }
  }
}
extern "C" __global__ void kt_first_badbf16(const unsigned short* out, long long n, unsigned long long* first) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    if ((out[i] & 0x7f80u) == 0x7f80u) { atomicMin(first, (unsigned long long)i); return; }
  }
}
extern "C" __global__ void kt_gather32(const unsigned int* out, const int* rows, long long n, int rowLen, unsigned int* dst) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    dst[i] = out[(long long)rows[i / rowLen] * rowLen + i % rowLen];
  }
}
extern "C" __global__ void kt_gather16(const unsigned short* out, const int* rows, long long n, int rowLen, unsigned short* dst) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    dst[i] = out[(long long)rows[i / rowLen] * rowLen + i % rowLen];
  }
}`

// OutputSample poisons the output, runs once on the first copy as Output
// does, and returns the sample's rows, the index of the first element of
// the whole output that is not finite (-1 for none) and the output's
// length, computed on the GPU (sampleKernels).
func (pr *program) OutputSample(ti device.Instance, s kernels.RowSample) ([]float32, int, int, error) {
	in, err := gpuhost.Of(ti, buffers{pr.b}, "cuda")
	if err != nil {
		return nil, 0, 0, err
	}
	n := in.OutLen
	if s.RowLen <= 0 {
		return nil, 0, 0, fmt.Errorf("a sample of rows of %d elements", s.RowLen)
	}
	rows := make([]byte, 4*len(s.Rows))
	for i, r := range s.Rows {
		if r < 0 || (r+1)*s.RowLen > n {
			return nil, 0, 0, fmt.Errorf("sampled row %d of %d elements lies outside an output of %d", r, s.RowLen, n)
		}
		binary.LittleEndian.PutUint32(rows[4*i:], uint32(r))
	}
	dt := in.Problem.DType
	first, gather := pr.b.firstBad32, pr.b.gather32
	switch dt {
	case kernels.F16:
		first, gather = pr.b.firstBad16, pr.b.gather16
	case kernels.BF16:
		first, gather = pr.b.firstBadBF16, pr.b.gather16
	}
	elems := s.Elems()
	sample := make([]byte, elems*dt.Size())
	var firstBad uint64
	err = pr.b.ctx.Do(func(t *cudadrv.Thread) error {
		if err := in.Poison(threadMemory{t}); err != nil {
			return err
		}
		if err := pr.launch(t, in, 0); err != nil {
			return err
		}
		// One scratch buffer: the first bad index, the rows, the sample.
		scratch, err := t.Alloc(int64(8 + len(rows) + len(sample)))
		if err != nil {
			return err
		}
		defer t.Free(scratch)
		firstPtr, rowsPtr, samplePtr := scratch, scratch+8, scratch+8+cudadrv.DevPtr(len(rows))
		if err := t.MemsetD32(firstPtr, math.MaxUint32, 2); err != nil {
			return err
		}
		if err := t.CopyHtoD(rowsPtr, rows); err != nil {
			return err
		}
		const threads = 256
		blocks := func(m int) uint32 { return uint32(max(1, min((m+threads-1)/threads, 8*pr.b.props.SMs))) }
		if err := t.Launch(first, [3]uint32{blocks(n), 1, 1}, [3]uint32{threads, 1, 1}, 0, in.Out, int64(n), firstPtr); err != nil {
			return err
		}
		if err := t.Launch(gather, [3]uint32{blocks(elems), 1, 1}, [3]uint32{threads, 1, 1}, 0, in.Out, rowsPtr, int64(elems), int32(s.RowLen), samplePtr); err != nil {
			return err
		}
		if err := t.Sync(); err != nil {
			return err
		}
		var fb [8]byte
		if err := t.CopyDtoH(fb[:], firstPtr); err != nil {
			return err
		}
		firstBad = binary.LittleEndian.Uint64(fb[:])
		return t.CopyDtoH(sample, samplePtr)
	})
	if err != nil {
		return nil, 0, 0, err
	}
	bad := -1
	if firstBad != math.MaxUint64 {
		bad = int(firstBad)
	}
	return kernels.Decode(dt, sample), bad, n, nil
}
