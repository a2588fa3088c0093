// Package all imports every kernel family that lives in its own folder
// (package family), so that one import of it registers them all: kerntune
// imports it, and so do the tests that range over every family. A new
// folder family is one more line here.
package all

import (
	_ "github.com/kerntune/kerntune/family/twice"
)
