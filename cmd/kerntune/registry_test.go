package main

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/tuner"
)

// An unknown --backend is a usage error that wraps tuner.ErrUnknownBackend,
// so callers test it with errors.Is rather than by its text.
func TestUnknownBackendWrapsSentinel(t *testing.T) {
	for name, open := range map[string]func() error{
		"tune":  func() error { _, err := pickBackend("vulkan", io.Discard, false, backendOptions{}); return err },
		"check": func() error { _, err := openGPUBackend("vulkan", io.Discard); return err },
	} {
		err := open()
		var ue usageError
		if !errors.Is(err, tuner.ErrUnknownBackend) || !errors.As(err, &ue) || !strings.Contains(err.Error(), "--backend vulkan") {
			t.Errorf("%s: %v, want a usage error wrapping tuner.ErrUnknownBackend", name, err)
		}
	}
}

// Spec kernels need a GPU backend; the traits, not a list of names, say which.
func TestBackendSpace(t *testing.T) {
	for name, want := range map[string]string{"cpu": tuner.SpaceCPU, "cuda": tuner.SpaceGPU, "metal": tuner.SpaceGPU, "opencl": tuner.SpaceGPU, "vulkan": ""} {
		if tr, _ := tuner.TraitsOf(name); tr.Space != want {
			t.Errorf("space of %q: %q, want %q", name, tr.Space, want)
		}
	}
	_, err := openGPUBackend("cpu", io.Discard)
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "the cpu backend cannot run them") {
		t.Errorf("check --backend cpu: %v", err)
	}
}
