package params

import (
	"github.com/kerntune/kerntune/params/families"
	"github.com/kerntune/kerntune/params/paramfile"
)

// Names of the built-in families, for Resolve and Launch: keys in the file
// and in env variables (package families describes them).
const (
	GemmAV  = families.GemmAV
	GemmAtB = families.GemmAtB
	GemvNT  = families.GemvNT
	QGemv   = families.QGemv
	Lora    = families.Lora
	Softmax = families.Softmax
	RMSNorm = families.RMSNorm
)

// DefaultFileName is the file name the tuner writes and the loader looks for.
const DefaultFileName = paramfile.DefaultFileName

// PathError is a problem at a JSON path of a params file: Open, Load and
// LoadBytes return one for a damaged file.
type PathError = paramfile.PathError
