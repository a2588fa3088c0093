// Package testutil holds test scaffolding that several packages share:
// compiling the project's JSON Schemas (params/schema.json,
// spec/schema.json) and validating documents against them, the expression
// cases both loaders run, files and JSON read and written in a test's
// directory, a registry lookup that fails the test, and skips where a
// tool (a C compiler, clang, a GPU driver) is missing, which fail instead
// where the matching KTDEV_REQUIRE_* variable is set.
//
// Contract: a helper that checks takes the test's testing.TB, marks itself
// a helper and fails through it; the others (SameKeys, Validate, ExprValue,
// CCompiler) return what they found. Only tests and test scaffolding
// import it, and it imports nothing above internal/
// (scripts/archcheck/layers_test.go).
package testutil
