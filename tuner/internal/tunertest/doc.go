// Package tunertest holds test scaffolding that the tuner's packages
// share: a family's kernel, its default candidate and a problem loaded
// into a backend, each failing the test instead of returning an error.
//
// Contract: it imports no backend and not the tuner itself, so that the
// tuner's own tests and every backend's can use it.
package tunertest
