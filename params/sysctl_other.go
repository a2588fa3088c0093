//go:build !darwin

package params

// sysctlCPUModel has nothing to read outside macOS.
func sysctlCPUModel() string { return "" }
