package families

import "testing"

// BenchmarkSpaceCheck is a family's Check as the tuner's enumeration calls
// it on every combination of a GEMM space's product (about 3 million, of
// which 0.4 % are valid): a valid candidate, and one that breaks a rule,
// whose message is rendered only when read.
func BenchmarkSpaceCheck(b *testing.B) {
	sp := Builtin()[GemmAV].Spaces["gpu"]
	valid := sp.Defaults()
	broken := sp.Defaults()
	broken["BM"], broken["WM"] = 32, 8 // warps that do not fit the tile
	if sp.Check(nil, valid) != nil || sp.Check(nil, broken) == nil {
		b.Fatalf("the default must pass and %v must not", broken)
	}
	for _, c := range []struct {
		name string
		p    map[string]int
	}{{"valid", valid}, {"broken", broken}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = sp.Check(nil, c.p)
			}
		})
	}
}
