//go:build !darwin

package metal

import (
	"errors"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/tuner/device"
)

func TestOpenUnavailableOffMac(t *testing.T) {
	b, err := Open()
	if err == nil || b != nil {
		t.Fatalf("Open() = %v, %v; want an error", b, err)
	}
	if !errors.Is(err, device.ErrUnavailable) || !strings.Contains(err.Error(), "macOS") {
		t.Errorf("Open() error %q does not wrap device.ErrUnavailable with a reason", err)
	}
	if _, err := device.Open("metal"); !errors.Is(err, device.ErrUnavailable) {
		t.Errorf(`device.Open("metal") = %v, want device.ErrUnavailable`, err)
	}
}
