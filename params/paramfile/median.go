package paramfile

import (
	"slices"
	"strings"
)

// SourceMedianUS is the median, in µs, that f records on shape for the
// entry a resolved parameter's Source names ("file:<device>/<family>/<entry
// key>", every parameter from that one entry), or 0: another source (an
// environment variable, a default, parameters from several entries), or
// an entry that did not time the shape. An entry written before shape
// medians were recorded answers with its MedianUS for its one shape.
func (f *File) SourceMedianUS(source string, shape []int) float64 {
	if f == nil || !strings.HasPrefix(source, "file:") || strings.Contains(source, ";") {
		return 0
	}
	for dk, d := range f.Devices {
		for fam, es := range d.Kernels {
			for ek, e := range es {
				if "file:"+dk+"/"+fam+"/"+ek != source {
					continue
				}
				for i, s := range e.Shapes {
					if slices.Equal(s, shape) && i < len(e.ShapeMedianUS) {
						return e.ShapeMedianUS[i]
					}
				}
				if len(e.Shapes) == 1 && slices.Equal(e.Shapes[0], shape) {
					return e.MedianUS
				}
			}
		}
	}
	return 0
}
