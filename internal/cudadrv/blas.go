package cudadrv

import (
	"fmt"
	"math"
	"unsafe"
)

// Blas is a context's cuBLAS handle, bound to the context's stream with
// math mode CUBLAS_DEFAULT_MATH (no TF32 for 32-bit compute). Its methods
// marshal to the context thread; inside a closure use Thread.Blas, whose
// ThreadBlas has the same methods running directly. The calls are
// asynchronous on the stream, like launches. Matrices are column-major, as
// in cuBLAS.
type Blas struct {
	c *Context
	h uintptr // cublasHandle_t; 0 after Close
}

// ThreadBlas is the cuBLAS handle as used from the context thread.
type ThreadBlas struct {
	b *Blas
	t *Thread
}

// Blas returns the context's cuBLAS handle, creating it on first use
// (cublasCreate_v2, cublasSetStream_v2, cublasSetMathMode). It fails with
// an error wrapping ErrUnavailable when cuBLAS was not loaded.
func (t *Thread) Blas() (*ThreadBlas, error) {
	if err := t.ready(); err != nil {
		return nil, err
	}
	if t.blas == nil {
		bl := t.lib.blas
		if bl == nil {
			return nil, t.lib.CUBLASError()
		}
		var h uintptr
		if r := bl.cublasCreate(&h); r != cublasStatusSuccess {
			return nil, newCUBLASError("cublasCreate_v2", r, "")
		}
		if r := bl.cublasSetStream(h, t.stream); r != cublasStatusSuccess {
			bl.cublasDestroy(h)
			return nil, newCUBLASError("cublasSetStream_v2", r, "")
		}
		if r := bl.cublasSetMathMode(h, cublasDefaultMath); r != cublasStatusSuccess {
			bl.cublasDestroy(h)
			return nil, newCUBLASError("cublasSetMathMode", r, "CUBLAS_DEFAULT_MATH")
		}
		t.blas = &Blas{c: t.c, h: h}
	}
	return &ThreadBlas{b: t.blas, t: t}, nil
}

// Blas returns the context's cuBLAS handle; see Thread.Blas.
func (c *Context) Blas() (b *Blas, err error) {
	err = c.Do(func(t *Thread) error {
		tb, e := t.Blas()
		if e == nil {
			b = tb.b
		}
		return e
	})
	return
}

func (tb *ThreadBlas) ready() error {
	if err := tb.t.ready(); err != nil {
		return err
	}
	if tb.b.h == 0 || tb.t.blas != tb.b {
		return ErrClosed
	}
	return nil
}

func fitsInt32(vals ...int) error {
	for _, v := range vals {
		if v < math.MinInt32 || v > math.MaxInt32 {
			return fmt.Errorf("cudadrv: cuBLAS argument %d does not fit in a C int", v)
		}
	}
	return nil
}

// GemmEx computes C = alpha*op(A)*op(B) + beta*C with cublasGemmEx,
// CUBLAS_COMPUTE_32F and CUBLAS_GEMM_DEFAULT: op(A) is m×k, op(B) k×n,
// C m×n, all column-major with leading dimensions lda, ldb, ldc; transA
// and transB select CUBLAS_OP_T. aType/bType/cType are the element types
// (R32F, R16F, R16BF, ...); cuBLAS returns CUBLAS_STATUS_NOT_SUPPORTED for
// combinations it lacks.
func (tb *ThreadBlas) GemmEx(transA, transB bool, m, n, k int, alpha float32, A DevPtr, aType DataType, lda int,
	B DevPtr, bType DataType, ldb int, beta float32, C DevPtr, cType DataType, ldc int) error {
	if err := tb.ready(); err != nil {
		return err
	}
	if err := fitsInt32(m, n, k, lda, ldb, ldc); err != nil {
		return err
	}
	al, be := new(float32), new(float32) // host scalars, read by cuBLAS during the call
	*al, *be = alpha, beta
	r := tb.t.lib.blas.cublasGemmEx(tb.b.h, cublasOp(transA), cublasOp(transB), int32(m), int32(n), int32(k),
		unsafe.Pointer(al), uintptr(A), int32(aType), int32(lda),
		uintptr(B), int32(bType), int32(ldb),
		unsafe.Pointer(be), uintptr(C), int32(cType), int32(ldc),
		cublasCompute32F, cublasGemmDefault)
	if r != cublasStatusSuccess {
		return newCUBLASError("cublasGemmEx", r, fmt.Sprintf("transA=%v transB=%v m=%d n=%d k=%d A:%v lda=%d B:%v ldb=%d C:%v ldc=%d compute=CUBLAS_COMPUTE_32F",
			transA, transB, m, n, k, aType, lda, bType, ldb, cType, ldc))
	}
	return nil
}

// Sgemv computes y = alpha*op(A)*x + beta*y with cublasSgemv_v2 (float32;
// A is m×n column-major with leading dimension lda; trans selects
// CUBLAS_OP_T, making op(A) n×m).
func (tb *ThreadBlas) Sgemv(trans bool, m, n int, alpha float32, A DevPtr, lda int, x DevPtr, incx int,
	beta float32, y DevPtr, incy int) error {
	if err := tb.ready(); err != nil {
		return err
	}
	if err := fitsInt32(m, n, lda, incx, incy); err != nil {
		return err
	}
	al, be := new(float32), new(float32)
	*al, *be = alpha, beta
	r := tb.t.lib.blas.cublasSgemv(tb.b.h, cublasOp(trans), int32(m), int32(n), al, uintptr(A), int32(lda),
		uintptr(x), int32(incx), be, uintptr(y), int32(incy))
	if r != cublasStatusSuccess {
		return newCUBLASError("cublasSgemv_v2", r, fmt.Sprintf("trans=%v m=%d n=%d lda=%d incx=%d incy=%d", trans, m, n, lda, incx, incy))
	}
	return nil
}

// GemmEx runs ThreadBlas.GemmEx on the context thread.
func (b *Blas) GemmEx(transA, transB bool, m, n, k int, alpha float32, A DevPtr, aType DataType, lda int,
	B DevPtr, bType DataType, ldb int, beta float32, C DevPtr, cType DataType, ldc int) error {
	return b.c.Do(func(t *Thread) error {
		tb, err := b.on(t)
		if err != nil {
			return err
		}
		return tb.GemmEx(transA, transB, m, n, k, alpha, A, aType, lda, B, bType, ldb, beta, C, cType, ldc)
	})
}

// Sgemv runs ThreadBlas.Sgemv on the context thread.
func (b *Blas) Sgemv(trans bool, m, n int, alpha float32, A DevPtr, lda int, x DevPtr, incx int,
	beta float32, y DevPtr, incy int) error {
	return b.c.Do(func(t *Thread) error {
		tb, err := b.on(t)
		if err != nil {
			return err
		}
		return tb.Sgemv(trans, m, n, alpha, A, lda, x, incx, beta, y, incy)
	})
}

func (b *Blas) on(t *Thread) (*ThreadBlas, error) {
	if t.blas != b || b.h == 0 {
		return nil, ErrClosed
	}
	return &ThreadBlas{b: b, t: t}, nil
}
