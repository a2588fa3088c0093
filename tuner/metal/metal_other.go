//go:build !darwin

package metal

import (
	"fmt"

	"github.com/kerntune/kerntune/tuner"
)

func open(Options) (tuner.Backend, error) {
	return nil, fmt.Errorf("%w: Metal is only available on macOS", tuner.ErrUnavailable)
}
