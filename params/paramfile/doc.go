// Package paramfile is the store of hardware_params.json that the tuner and
// kerntune merge use: the file's schema types (File, Device, Entry and its
// measurement records), parsing with errors that name the JSON path,
// merging under a lock with an atomic write, the rule that keeps the
// better of two entries (ChooseEntry), and the limits on what is read.
// The format is params/schema.json. It imports only the standard library
// and params/families.
package paramfile
