// Package registry holds what kernel spec files add at run time beside the
// built-in families: the kernels package's kernels and the GPU bodies.
//
// Contract: a Map is safe for concurrent use; an entry whose name is a
// built-in family's is refused with an error that says so, and a name
// added again replaces its entry (a spec file loaded again). It imports
// only the standard library.
package registry
