// Package ktcache reads Kernel Tuner cache files: the classic cache format
// (tune_params, tune_params_keys and a cache map from "v1,v2,..." to a
// record) and the T4 results format (metadata, results, schema_version;
// decoded by package t4), gzip-compressed or not. A cache is a recorded
// search space: the configurations it holds, their raw timing samples and
// compile times.
//
// It only reads; it imports internal/t4, params and search (a configuration
// becomes a search.Candidate). search/replay and kerntune replay use it.
package ktcache
