//go:build unix

package paramfile

import (
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock (flock) on path, creating it if
// needed, and returns the function that removes it and releases the lock.
// A sibling lock file is locked rather than the params file itself because
// the params file is replaced by a rename, which would leave a lock on the
// old inode. The holder removes the lock file before releasing it, so none
// is left beside the params file; a waiter that then gets the lock on the
// removed inode sees that path no longer names it and tries again.
func lockFile(path string) (func(), error) {
	for {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return nil, fmt.Errorf("lock file %s: %w", path, err)
		}
		for {
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
			if err != syscall.EINTR {
				break
			}
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		held, herr := f.Stat()
		now, nerr := os.Stat(path)
		if herr == nil && nerr == nil && os.SameFile(held, now) {
			return func() {
				os.Remove(path)
				syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		f.Close() // the holder before us removed it: lock the new one
	}
}
