package params

import (
	"runtime"
	"testing"
)

func TestParseIoreg(t *testing.T) {
	const m3 = `+-o AGXAcceleratorG15X  <class AGXAcceleratorG15X, id 0x1000003a5, registered, matched, active, busy 0 (1 ms), retain 58>
    {
      "IOClass" = "AGXAcceleratorG15X"
      "model" = "Apple M3 Max"
      "gpu-core-count" = 40
      "IOMatchCategory" = "IOAccelerator"
    }
    
`
	tests := []struct {
		name, out, model string
		cores            int
		fail             bool
	}{
		{name: "an Apple GPU", out: m3, model: "Apple M3 Max", cores: 40},
		{name: "the first entry with a core count", out: "+-o A  <class A>\n  {\n    \"model\" = \"X\"\n  }\n" + m3, model: "Apple M3 Max", cores: 40},
		{name: "no model", out: "+-o A\n  {\n    \"gpu-core-count\" = 10\n  }\n", cores: 10},
		{name: "no entry", out: "", fail: true},
		{name: "a count that is not a number", out: "+-o A\n  {\n    \"gpu-core-count\" = <0a000000>\n  }\n", fail: true},
		{name: "a zero count", out: "+-o A\n  {\n    \"gpu-core-count\" = 0\n  }\n", fail: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			model, cores, err := parseIoreg(tt.out)
			if (err != nil) != tt.fail || model != tt.model || cores != tt.cores {
				t.Errorf("parseIoreg = %q, %d, %v; want %q, %d, failing %v", model, cores, err, tt.model, tt.cores, tt.fail)
			}
		})
	}
}

// TestLocalGPU: the lookup never panics, and reports an error rather than
// a device without compute units.
func TestLocalGPU(t *testing.T) {
	g, err := LocalGPU()
	switch {
	case err != nil && g != (DeviceID{}):
		t.Errorf("LocalGPU = %+v with error %v", g, err)
	case err == nil && (g.ComputeUnits <= 0 || g.Backend != "metal"):
		t.Errorf("LocalGPU = %+v", g)
	case runtime.GOOS != "darwin" && err == nil:
		t.Errorf("LocalGPU on %s = %+v; want an error", runtime.GOOS, g)
	}
	if g2, err2 := LocalGPU(); g2 != g || (err2 == nil) != (err == nil) {
		t.Errorf("a second call gave %+v, %v", g2, err2)
	}
}
