//go:build !unix

package paramfile

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// lockFile takes an exclusive lock by creating path with O_EXCL, waiting up
// to a minute for another writer to remove it. Systems without flock get
// this fallback; a lock file left by a killed writer must be removed by hand,
// which the error says.
func lockFile(path string) (func(), error) {
	deadline := time.Now().Add(time.Minute)
	for {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			f.Close()
			return func() { os.Remove(path) }, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("lock file %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("lock file %s is held for over a minute; remove it if no kerntune is writing", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
