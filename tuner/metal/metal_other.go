//go:build !darwin

package metal

import (
	"fmt"

	"github.com/kerntune/kerntune/tuner/device"
)

func open(Options) (device.Backend, error) {
	return nil, fmt.Errorf("%w: Metal is only available on macOS", device.ErrUnavailable)
}
