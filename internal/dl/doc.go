// Package dl loads shared libraries and binds their C functions through
// purego (no cgo), for the driver bindings of the GPU backends.
//
// It imports only purego. On platforms other than Linux and macOS every
// function returns an error instead, so that every binary builds everywhere
// and reports the GPU backends as unavailable.
package dl
