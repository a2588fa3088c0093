package cldrv

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
)

// A program's binary builds again without its source and runs the same
// kernel; a damaged binary is refused, not run.
func TestProgramBinaryRoundTrip(t *testing.T) {
	c, _ := firstContext(t)
	src, err := c.Build(testKernel, "-cl-std=CL1.2")
	if err != nil {
		t.Fatal(err)
	}
	bin, err := src.Binary()
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Release(); err != nil {
		t.Fatal(err)
	}
	p, err := c.BuildBinary(bin, "-cl-std=CL1.2")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	again, err := p.Binary()
	if err != nil || len(again) == 0 {
		t.Fatalf("binary of a program built from a binary: %d bytes, %v", len(again), err)
	}
	k, err := p.Kernel("axpy")
	if err != nil {
		t.Fatal(err)
	}
	defer k.Release()
	const n = 64
	xh := bytes.Repeat([]byte{0x00, 0x3c}, n) // 1.0 in half
	x, err := c.Alloc(len(xh))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free(x)
	y, err := c.Alloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free(y)
	if err := c.Write(x, xh); err != nil {
		t.Fatal(err)
	}
	if err := c.Fill32(y, math.Float32bits(2), n); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Launch([2]int{n / 16, 1}, [2]int{16, 1}, false, x, y, float32(3), int32(n)); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 4*n)
	if err := c.Read(out, y); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if v := math.Float32frombits(binary.LittleEndian.Uint32(out[4*i:])); v != 5 {
			t.Fatalf("y[%d] = %v, want 5", i, v)
		}
	}
	if p, err := c.BuildBinary(nil, ""); err == nil {
		p.Release()
		t.Fatal("built an empty binary")
	}
}
