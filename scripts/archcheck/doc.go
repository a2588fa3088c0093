// Package archcheck holds tests of what docs/design/architecture.md states
// about the tree, so that the page stays true without a regeneration step:
// the layers (which packages may import which, TestLayers) and the number of
// files each kind of addition touches, as the trial scripts make it
// (TestTrialAdditions). It has no code of its own.
package archcheck
