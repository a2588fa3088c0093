package metal

import (
	"crypto/sha256"
	"encoding/hex"
)

// shapedKey is the compile cache key of a shape-dependent candidate's
// pipeline on one shape: the candidate's key, the function name (which
// carries the template values and the small inputs' suffixes) and a hash
// of the source (which carries the filled format placeholders), so that
// shapes that generate the same source share one pipeline and shapes that
// do not never do.
func shapedKey(candidate, fn, src string) string {
	h := sha256.Sum256([]byte(src))
	return candidate + "|" + fn + "|" + hex.EncodeToString(h[:12])
}
