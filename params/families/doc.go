// Package families describes kernel families as the params file, the
// loader and the tuner see them: the built-in families, read from their
// descriptions (NAME.json in this directory, which the Python loader reads
// too), the description format and its expression language (Expr), and
// the shapes, dtypes and parameter names they share. It imports only the
// standard library.
package families
