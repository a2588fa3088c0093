//go:build !darwin

package metal

import (
	"errors"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/tuner"
)

func TestOpenUnavailableOffMac(t *testing.T) {
	b, err := Open()
	if err == nil || b != nil {
		t.Fatalf("Open() = %v, %v; want an error", b, err)
	}
	if !errors.Is(err, tuner.ErrUnavailable) || !strings.Contains(err.Error(), "macOS") {
		t.Errorf("Open() error %q does not wrap tuner.ErrUnavailable with a reason", err)
	}
	if _, err := tuner.Open("metal"); !errors.Is(err, tuner.ErrUnavailable) {
		t.Errorf(`tuner.Open("metal") = %v, want tuner.ErrUnavailable`, err)
	}
}
