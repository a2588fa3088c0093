// Package params loads and resolves hardware_params.json, the file in
// which kerntune records the tuned kernel parameters of each device.
// Applications import it to answer, at run time, one question: which
// parameters do I launch this kernel with, for this shape, on this device?
// It imports only the standard library and its subpackages: params/families
// (the kernel families, their descriptions and expression language) and
// params/paramfile (the file's types, parsing, merging and writing, which
// the tuner and kerntune merge use).
//
// # Loading from Go
//
//	l, err := params.Open(params.Options{}) // $KERNTUNE_PARAMS, else ./hardware_params.json
//	if err != nil {
//		return err // a damaged file: the error names the file and the JSON path
//	}
//	r, err := l.Resolve(params.GemvNT, "f32", []int{1, 896, 4864})
//	if err != nil {
//		return err // unknown family or dtype, bad shape, bad environment variable
//	}
//	bn := r.Int("BN")           // e.g. 64
//	src := r.Params["BN"].Source // e.g. "file:cpu:…/gemv_nt/f32/largeK_smallN"
//
// On the CPU that is all (the loader finds this CPU's entries through
// LocalDevice). On a GPU, name the device as the system reports it, and
// call the vendor library where the file says it is faster:
//
//	l, err := params.Open(params.Options{DeviceName: mtlDevice.Name(), ComputeUnits: gpuCores, Backend: "metal"})
//	...
//	for _, w := range l.Warnings() {
//		log.Print(w) // e.g. no device in the file matches; which devices it holds
//	}
//	r, err := l.Resolve(params.GemmAV, "f16", []int{m, n, k})
//	...
//	if r.UseBaseline {
//		/* call MPS (r.Baseline names it): it measured faster than every candidate */
//	} else {
//		/* launch the tuned kernel with r.Int("BM"), r.Int("BN"), ... */
//	}
//
// A missing file is not an error for Open (defaults and variables apply);
// Load(path, opts) insists on the file and LoadBytes parses bytes. A file
// larger than paramfile.MaxFileSize (64 MiB) is an error naming the file
// and the limit; from a device or pipe at most that much is read. A Loader
// is immutable and safe for concurrent use; Resolve reads the parameter
// variables at every call (through Options.Lookup, os.LookupEnv by default)
// and is cheap enough for hot paths (see BenchmarkResolve).
//
// # Precedence
//
// Every parameter is resolved on its own; the first source that sets it wins:
//
//  1. the environment variable <PREFIX>_<FAMILY>_<PARAM>, e.g.
//     KERNTUNE_GEMV_NT_BN=8 (source "env:KERNTUNE_GEMV_NT_BN");
//  2. the device's exact-shape entry, "<dtype>/<m>x<n>x<k>" (e.g. f32/1x896x4864;
//     source "file:<device key>/<family>/<entry key>");
//  3. the device's shape-class entry, "<dtype>/<class>" (e.g. f32/largeK_smallN);
//  4. the same two entries on each fallback device in turn (source
//     "fallback:<device key>/<family>/<entry key>");
//  5. the built-in default: Options.Defaults, else the family's (source "default").
//
// An entry normally sets every parameter of the family; one that sets only
// some leaves the others to the levels below it. A variable overrides only
// its own parameter.
//
// Resolved.UseBaseline says whether to call the baseline the tuner timed
// (Resolved.Baseline: cuBLAS, MPS, gonum, ...) instead of the tuned kernel:
// $<PREFIX>_<FAMILY>_USE when set, else the "use" field of the first
// matching entry in the order above (absent: tuned), else false;
// Resolved.UseSource says which, as Source does for values.
//
// If the resolved set breaks the family's constraints
// (families.Space.Check) for the shape (say a class entry that does not suit a small
// member of its class), Resolve keeps the largest set of matching entries
// that passes, preferring higher ones, down to the defaults alone, always
// keeping the variables' values; if even the defaults cannot satisfy the
// constraints together with the variables, Resolve returns an *EnvError.
//
// # Environment variables
//
// The prefix is KERNTUNE unless Options.EnvPrefix names another (e.g. XLSTM).
//
//	<PREFIX>_PARAMS           path of the params file (read by Open)
//	<PREFIX>_DEVICE           key of the device whose entries apply (read when loading)
//	<PREFIX>_DEVICE_NAME      name of the device, replacing Options.DeviceName (read when loading)
//	<PREFIX>_<FAMILY>_<PARAM> one parameter (read at every Resolve), e.g.
//	                          KERNTUNE_GEMM_AV_MC=128, KERNTUNE_SOFTMAX_THREADS=2
//	<PREFIX>_<FAMILY>_USE     baseline or tuned: call the baseline or the tuned kernel,
//	                          replacing the entry's "use" (read at every Resolve)
//
// An application may add composite variables, Options.Aliases: one variable
// setting several parameters, e.g. MLX_GEMM_TILE_AV=32x8 for BM and BN (see
// Alias). A parameter's own variable beats an alias, an alias the file.
//
// The family is upper-cased, with characters other than letters, digits and _
// turned into _. A parameter variable must hold a base-10 integer (spaces
// around it are ignored; an empty value counts as unset) that is among the
// parameter's allowed values; otherwise Resolve returns an *EnvError naming
// the variable, the value and the allowed values. A variable naming no
// parameter of the family (KERNTUNE_GEMV_NT_XX) is ignored, since a lookup
// function cannot enumerate the environment, and so is one of a parameter
// the device's backend does not have (KERNTUNE_GEMV_NT_TG, a GPU parameter,
// on a CPU device), or of a family without parameters for it;
// Loader.UnusedEnv lists every variable with the prefix that has no effect
// (these, and <PREFIX>_PARAMS or <PREFIX>_DEVICE when the caller named the
// file or the device), Loader.UnusedEnvVars says why, and `kerntune get`
// warns about them. <PREFIX>_<FAMILY>_USE must
// be "baseline" or "tuned" (spaces around it ignored, empty is unset);
// another value makes Resolve return an *EnvError naming the variable and
// the allowed values. USE is therefore no parameter name (families.ReservedParamName).
//
// # Devices
//
// The device whose entries apply (levels 2 and 3) is found in this order,
// and DeviceChoice.Matched and Resolved.Matched say which step found it:
//
//  1. "key": the key Options.Device, else $<PREFIX>_DEVICE, if the file
//     holds it;
//  2. "name": a device whose "name" field equals the name
//     $<PREFIX>_DEVICE_NAME, else Options.DeviceName, but for ASCII case
//     and runs of white space (FoldDeviceName), and whose "backend" is
//     Options.Backend when that is set. Use the name the system reports:
//     MTLDevice.name and MLX's mx.metal.device_info()["device_name"] ("Apple
//     M3 Max"), cudaDeviceProp.name and nvidia-smi ("NVIDIA H100 80GB
//     HBM3"), the CPU model; these are the names kerntune's backends record.
//     A name is never matched in part ("NVIDIA H100" is not "NVIDIA H100
//     80GB HBM3"). The compute units, Options.ComputeUnits, else those of
//     this machine's GPU when it has that name (Options.LocalGPU, by default
//     LocalGPU(): on macOS the Apple GPU's gpu-core-count from the I/O
//     Registry, for MLX's device_info() does not report it), pick the device
//     with exactly that many. A choice that is not exact is a warning that
//     names every device of the name with its compute units and the one
//     chosen: among several without known compute units, the first by key
//     ("name, first of 2 by key (no compute units given)"); several with
//     them, the first of those by key ("name, first of 2 by key with 40
//     compute units"); none with them, the nearest ("name, nearest compute
//     units (40 for 38)", or "name, compute units not recorded (wanted 38)");
//  3. "only device in file": when nothing above names a device and the file
//     holds exactly one, unless it is another machine's: its backend is not
//     Options.Backend (when set), or, when the local device applies (as in
//     step 4), its backend or its model is not the local device's (the
//     model: the name as FoldDeviceName compares it, and the family when
//     both record one). Another machine's device is no match, only a
//     fallback device when its family is the device's (step 5), and
//     Loader.Warnings names it and the local device and says what applies.
//     The only device of the local device's model under another key (other
//     cores) applies, with a warning naming both;
//  4. the local device, Options.Local (by default LocalDevice(), this CPU),
//     when nothing names a device, the file holds several and Options.Backend
//     is empty or the local device's backend: by key ("key"), then by name
//     and compute units among the devices of its backend ("name…"). So a Go
//     application on the CPU finds the entries the CPU backend wrote on
//     this machine, or on a CPU of the same model, without options;
//  5. else no device of the file applies: the fallback devices of the
//     family Options.DeviceFamily (for the local device attempt of step 4,
//     else its family, GOARCH) are used ("family <family>"), or the
//     defaults alone ("none").
//
// Fallback devices (level 4 of the precedence) are the file's other devices
// whose "family" field equals the device's (e.g. another amd64 CPU, another
// sm_90 GPU, another apple9 GPU) and whose backend has the same kind of
// parameter space: first those with the same backend, then the others, each
// group sorted by key. For a device not in the file, Options.Backend (else
// the local device's) stands for its backend. Whenever the file holds
// devices and none was matched, Loader.Warnings says so, what was asked and
// which devices the file holds; Open still succeeds, since defaults and
// fallbacks are valid answers. Loader.Device tells what was chosen.
//
// Which parameter space applies (cpu or gpu, see families.SpaceKind)
// follows the device's "backend" field; for a device not in the file, Options.Backend,
// else the first fallback device's backend, else "cpu". An Options.Backend
// of another kind than the file's device is an error.
//
// # Validation
//
// Loading rejects, with a *PathError naming the file and the JSON path
// (e.g. devices["cpu:x"].kernels.gemv_nt["f32/tiny"].params.BN): bytes that are
// not JSON (nesting deeper than 10000 levels included), a schema_version
// other than 1, a field of the wrong type or a number out of its range
// (1e400), an entry's "use" other than "baseline" or "tuned", a parameter
// name that is not an upper-case identifier or a value that is not a 32-bit
// integer, and, for every entry of a family the loader knows on a device
// whose backend has a space for it, a value outside the parameter's allowed
// values, a malformed or non-canonical exact-shape key, and a complete
// entry that breaks the family's Check. Entries of unknown families, and
// entries of known families on backends without a space for them, are kept
// as they are; entries with an unknown dtype or shape class are ignored with a
// warning. No input makes the package panic (see FuzzLoad).
//
// A file written by a newer kerntune loads as far as this version
// understands it: a field this loader does not know, at the top level, in a
// device or in an entry, and a parameter that a known family does not have
// (the entry's other parameters apply) are ignored with a warning naming
// the JSON path of the first occurrence and counting the other devices or
// entries that have it. Unknown fields of an entry's records (default,
// baseline, candidates, roofline, drift, time) and of facts are ignored
// silently: the loader uses none of them. Another schema_version stays an
// error: a new version is what a change of meaning would bring. paramfile's
// Merge, MergeFiles and MergeIntoFile keep every field and parameter they
// do not understand.
//
// # Other languages
//
// python/kerntune_params is this loader for Python, with the same
// precedence, variables, device matching, fallback and validation; both run
// the conformance suite in testdata/conformance.
//
// params/schema.json is a JSON Schema (draft 2020-12) of the file. The
// loader is stricter in one respect: integers must be written without a
// fraction or exponent (8, not 8.0).
package params
