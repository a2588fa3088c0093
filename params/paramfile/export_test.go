package paramfile

// The loader's tests of stored files (loader_test.go) start from these.
var (
	TypicalUpdate = typicalUpdate
	SparseFile    = sparseFile
)
