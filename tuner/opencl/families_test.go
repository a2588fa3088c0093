package opencl

// The families that live in their own folder register themselves when
// imported: the verification of every family on an OpenCL device (PoCL)
// runs theirs too.
import _ "github.com/kerntune/kerntune/family/all"
