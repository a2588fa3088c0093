// Package testutil holds test scaffolding that several packages share:
// compiling the project's JSON Schemas (params/schema.json,
// spec/schema.json) and validating documents against them, the expression
// cases both loaders run, files and JSON read and written in a test's
// directory, a registry lookup that fails the test, and skips where a
// tool (a C compiler, clang, a GPU driver) is missing, which fail instead
// where the matching KTDEV_REQUIRE_* variable is set.
//
// Contract: every helper reports through the testing.TB it is given and
// marks itself a helper; nothing here is imported by non-test code of the
// module (tests and test scaffolding only), and it imports nothing above
// internal/ (scripts/archfig/layers_test.go).
package testutil
