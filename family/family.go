// Package family holds the kernel families that live each in one folder,
// family/NAME: its description (NAME.json), its float64 reference and
// catalog entry, its GPU body, its CPU kernel, its vendor baselines if any
// and the naive implementation the mutation tests break, all registering
// themselves from the package's init. family/all imports every folder;
// kerntune imports family/all, so adding a family is one new folder and one
// import line there.
//
// This package itself is data only: it embeds the folders' descriptions,
// which params/families reads beside its own, so that applications, which
// import params alone, and the Python loader, which reads the same files,
// resolve a folder family's parameters without importing its code. It
// imports nothing of ours.
package family

import "embed"

// Descriptions are the folders' descriptions, NAME/NAME.json.
//
//go:embed */*.json
var Descriptions embed.FS
