//go:build unix

package compilecache

import (
	"os"
	"syscall"
)

// checksMode: Unix permissions say who may write a file.
const checksMode = true

// openFlags open an entry without following a symbolic link.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// fileOwner is the file's owner's uid.
func fileOwner(fi os.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
