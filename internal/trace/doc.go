// Package trace reads and writes the per-candidate trace of a tuning run: a
// file of JSON lines, one per measured candidate, which kerntune report uses
// for its per-candidate plots.
//
// Each line is an object with these fields (readers ignore others, so a
// journal with extra fields is also a trace):
//
//	device     device key, as in hardware_params.json ("cuda:NVIDIA H200")
//	kernel     family ("gemv_nt")
//	dtype      element type ("f32")
//	key        entry key ("f32/tiny" or "f32/1x896x4864"); a key without
//	           "/" is taken as a class or shape of dtype
//	params     the candidate's parameters ({"BN": 64, ...})
//	median_us  median time per sample in µs (summed over the entry's shapes);
//	           absent or 0 when the candidate failed
//	samples    how many samples the median is over
//	err        why the candidate failed (build, verification, timing), or absent
//	compile_s, verify_s, measure_s
//	           seconds the search spent building it (waiting for its
//	           compile), verifying it and timing it (warm-up and samples);
//	           absent in older traces
//	run        the tuning run that measured it (kerntune tune writes the
//	           time the run started, RFC 3339 with nanoseconds, on every
//	           line of the run); absent in older traces, where Read takes
//	           an entry's lines up to its entry line (below) as one run
//
// After an entry's candidates, kerntune tune appends one line of kind
// "entry" with the same device, kernel, dtype, key and run and no params:
// its "time" object says where the entry's wall time went (the fields of
// paramfile.TuneTime: wall_s, setup_s, compile_s, verify_s, measure_s,
// search_s, journal_s, other_s, device_s, idle_s, busy_pct), the same
// object the run's entry in the params file holds, which ties that entry
// to its run's records when a trace holds several runs of an entry and the
// file kept the result of one of them. Read skips such lines; ReadEntries
// returns them.
//
// It imports params only. Readers ignore fields they do not know, so the
// format only grows.
package trace
