// Package report writes a Markdown report with plots of a params file:
// per device, family and class the winner against the default and the
// baseline, and, from a trace of the tuning run, every candidate measured
// and the effect of each parameter (kerntune report).
//
// It reads a params file and a trace and writes files: it measures nothing.
// It imports params, internal/trace and search (candidate keys) only,
// besides gonum/plot.
package report
