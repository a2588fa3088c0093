//go:build !darwin

package params

// sysctlCPUModel has nothing to read outside macOS.
func sysctlCPUModel() string { return "" }

// readLocalGPU has no registry to read outside macOS.
func readLocalGPU() (DeviceID, error) { return DeviceID{}, errNoGPULookup }
