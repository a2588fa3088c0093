//go:build !unix

package sysmem

func addressLimit() (uint64, bool) { return 0, false }
