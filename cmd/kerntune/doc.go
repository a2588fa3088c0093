// Command kerntune tunes GPU and CPU kernels by measurement and writes
// hardware_params.json, which applications load through the params package.
//
// Each command is a file of its own that parses flags, calls a package and
// prints; what a command computes belongs to a package with its own tests
// (tuner, params, report, search/replay, internal/t4). It is the one package
// that imports the backends (the blank imports of backends.go register them
// with tuner), and no package imports it.
package main
