//go:build !darwin

package cpu

func sysctlModel() string { return "" }
