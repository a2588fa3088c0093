// Package sysmem tells how much memory this process can still allocate:
// the operating system's available memory, held to the address-space
// limit (ulimit -v) where one is set. The tuner checks a problem's
// estimated size against it before allocating, so that a shape too large
// for the machine is refused with a message rather than killed by the
// runtime. It imports only the standard library.
package sysmem
