//go:build !unix

package compilecache

import "os"

// checksMode: without Unix permissions the mode bits say nothing of who
// may write a file; the cache relies on the user's cache directory's ACLs.
const checksMode = false

// openFlags open an entry without following a symbolic link.
const openFlags = 0

// fileOwner reports no owner where the system gives no uid.
func fileOwner(os.FileInfo) (int, bool) { return 0, false }
