package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/tuner/device"
)

// An unknown --backend is a usage error that wraps device.ErrUnknownBackend,
// so callers test it with errors.Is rather than by its text.
func TestUnknownBackendWrapsSentinel(t *testing.T) {
	for name, open := range map[string]func() error{
		"tune": func() error { _, err := (*Factory)(nil).OpenBackend(backendRequest{Name: "vulkan"}); return err },
		"check": func() error {
			_, err := (*Factory)(nil).OpenBackend(backendRequest{Name: "vulkan", Space: device.SpaceGPU})
			return err
		},
	} {
		err := open()
		var ue usageError
		if !errors.Is(err, device.ErrUnknownBackend) || !errors.As(err, &ue) || !strings.Contains(err.Error(), "--backend vulkan") {
			t.Errorf("%s: %v, want a usage error wrapping device.ErrUnknownBackend", name, err)
		}
	}
}

// Spec kernels need a GPU backend; the traits, not a list of names, say which.
func TestBackendSpace(t *testing.T) {
	for name, want := range map[string]string{"cpu": device.SpaceCPU, "cuda": device.SpaceGPU, "metal": device.SpaceGPU, "opencl": device.SpaceGPU, "vulkan": ""} {
		if tr, _ := device.TraitsOf(name); tr.Space != want {
			t.Errorf("space of %q: %q, want %q", name, tr.Space, want)
		}
	}
	_, err := (*Factory)(nil).OpenBackend(backendRequest{Name: "cpu", Space: device.SpaceGPU})
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "the cpu backend cannot run them") {
		t.Errorf("check --backend cpu: %v", err)
	}
}
