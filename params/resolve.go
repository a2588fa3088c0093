package params

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/kerntune/kerntune/params/families"
	"github.com/kerntune/kerntune/params/paramfile"
)

// Errors that Resolve wraps, for errors.Is.
var (
	ErrUnknownFamily = errors.New("unknown kernel family")
	ErrUnknownDType  = errors.New("unknown dtype")
	ErrInvalidShape  = errors.New("invalid shape")
	// ErrNoSpace: the family has no parameters for the device's kind of backend.
	ErrNoSpace = errors.New("no parameters for this backend")
	// ErrDefaults: the built-in defaults of a family break its constraints
	// for a shape (possible for a family whose Check depends on the shape).
	ErrDefaults = errors.New("the built-in defaults break the family's constraints")
)

// The Source of a value: SourceDefault for one that came from the built-in
// defaults (the family's, or Options.Defaults), else one of the prefixes.
const (
	SourceDefault        = "default"
	SourceEnvPrefix      = "env:"      // env:KERNTUNE_GEMV_NT_BN
	SourceFilePrefix     = "file:"     // file:<device key>/<family>/<entry key>
	SourceFallbackPrefix = "fallback:" // fallback:<device key>/<family>/<entry key>
)

// Options configure Open, Load and LoadBytes. The zero value is ready to use.
type Options struct {
	// Path is the params file Open reads. Empty: the value of
	// <EnvPrefix>_PARAMS, else DefaultFileName in the working directory.
	// Load and LoadBytes ignore it.
	Path string

	// EnvPrefix is the prefix of every variable the loader reads (an
	// application may choose its own, such as XLSTM). Empty: DefaultEnvPrefix.
	// It must be an identifier ([A-Za-z_][A-Za-z0-9_]*).
	EnvPrefix string

	// Device is the key of the device whose entries apply. Empty: the value
	// of <EnvPrefix>_DEVICE. A key the file does not hold matches nothing
	// by itself; DeviceName is tried next.
	Device string

	// DeviceName is the device's name as the system reports it ("Apple M3
	// Max" from MTLDevice.name or MLX's device_info()["device_name"],
	// "NVIDIA H100 80GB HBM3" from nvidia-smi or cudaDeviceProp.name, the
	// CPU model). It matches the devices whose "name" field is equal but for
	// ASCII case and runs of white space (see FoldDeviceName), and, when
	// Backend is set, whose "backend" is Backend. $<EnvPrefix>_DEVICE_NAME,
	// when set, replaces it. ComputeUnits (GPU cores, SMs, CPU cores; 0:
	// unknown) picks among several devices of that name the one with the
	// nearest number.
	DeviceName   string
	ComputeUnits int

	// Local is the device this process runs on, tried when neither Device,
	// DeviceName nor their variables name a device: the file's only device
	// applies only when it has Local's backend and model (else it is
	// another machine's, see chooseDevice); among several, Local is found
	// by key, then by name and compute units among the devices of its
	// backend; and its family and backend stand for the device's when it is
	// not in the file (unless DeviceFamily and Backend are set). It applies
	// only when Backend is empty or Local's backend.
	// nil means LocalDevice() (this CPU); a pointer to a zero DeviceID
	// turns the attempt off.
	Local *DeviceID

	// LocalGPU is this machine's GPU. When ComputeUnits is 0 and DeviceName
	// (or its variable) names it (equal names, see FoldDeviceName), its
	// compute units stand for ComputeUnits, and, Backend being empty, only
	// the devices of its backend are matched if the file holds any: Apple
	// sells one chip name with several GPU core counts (an M3 Max has 30
	// or 40), and MLX's device_info() does not report the count. nil means
	// LocalGPU() (on macOS the Apple GPU, read from the I/O Registry, only
	// when a name matches a device); a pointer to a zero DeviceID turns the
	// lookup off. A name that matches several devices without known compute
	// units, or none with exactly the known ones, is a warning.
	LocalGPU *DeviceID

	// Backend (cpu, cuda, metal, ...) and DeviceFamily (amd64, sm_90, ...)
	// describe the device when it is not in the file: Backend picks the
	// parameter space (through families.SpaceKind) and DeviceFamily the
	// fallback devices. When the device is in the file its own fields are
	// used; a Backend of another kind than the file's device is an error.
	Backend      string
	DeviceFamily string

	// Lookup reads an environment variable; nil means os.LookupEnv. It is
	// called from Resolve, so it must be safe for concurrent use.
	Lookup func(name string) (string, bool)

	// Families adds families (an application's own kernels) or replaces
	// built-in ones, by name. They must not be changed after loading.
	Families map[string]*families.Family

	// Defaults overrides built-in defaults per family and parameter, e.g.
	// {"gemv_nt": {"BN": 64}}: the values an application would use without
	// a file. Each must be an allowed value of every space that has the
	// parameter.
	Defaults map[string]map[string]int

	// Aliases are composite variables the application declares, each
	// setting several parameters at once (see Alias).
	Aliases []Alias
}

// Alias is one variable that sets several parameters, values joined by
// Sep: Alias{Name: "MLX_GEMM_TILE_AV", Family: "gemm_av", Params:
// []string{"BM", "BN"}, Sep: "x"} makes MLX_GEMM_TILE_AV=32x8 set BM=32 and
// BN=8 (source "env:MLX_GEMM_TILE_AV"). It applies to Family, or, when
// Family is empty, to every family whose parameter space has all of
// Params. A parameter's own variable (<PREFIX>_<FAMILY>_<PARAM>) beats an
// alias, and an earlier alias a later one; an alias beats the file. Each
// value must be a base-10 integer among the parameter's allowed values, as
// for the parameter's own variable; an empty variable counts as unset.
type Alias struct {
	Name   string
	Family string
	Params []string
	Sep    string
}

// Value is a resolved parameter value and where it came from: "default",
// "env:<VARIABLE>", "file:<device>/<family>/<entry key>" or
// "fallback:<device>/<family>/<entry key>".
type Value struct {
	Value  int    `json:"value"`
	Source string `json:"source"`
}

// Resolved is the parameter set for one kernel launch.
type Resolved struct {
	// Device is the device key whose entries were looked up ("" if none was
	// chosen); values from a fallback device name that device in Source.
	Device string `json:"device"`
	// Backend is the backend whose parameter space applies.
	Backend string `json:"backend"`
	Family  string `json:"kernel"`
	DType   string `json:"dtype"`
	Shape   []int  `json:"shape"`
	Class   string `json:"class"`
	// Params holds every parameter of the family's space.
	Params map[string]Value `json:"params"`
	// Matched is how the device was found (DeviceChoice.Matched).
	Matched string `json:"matched"`

	// UseBaseline tells the application to call the baseline (Baseline,
	// e.g. cuBLAS, MPS, gonum) instead of the tuned kernel, because it
	// measured faster: from <PREFIX>_<FAMILY>_USE when set, else from the
	// "use" field of the first matching entry in precedence order (the
	// device's exact-shape entry, its class entry, then the fallback
	// devices'); absent means tuned. UseSource says which:
	// "env:<VARIABLE>", "file:…" or "fallback:…" (the deciding entry), or
	// "default" (no entry matched). Baseline is the name the deciding
	// entry's "baseline" records, "" if none.
	UseBaseline bool   `json:"use_baseline"`
	Baseline    string `json:"baseline,omitempty"`
	UseSource   string `json:"use_source"`

	names []string // the space's order; shared, never modified
}

// Int returns the value of the named parameter, or 0 if the family has no
// such parameter.
func (r *Resolved) Int(name string) int { return r.Params[name].Value }

// Ints returns the parameters as a plain map.
func (r *Resolved) Ints() map[string]int {
	m := make(map[string]int, len(r.Params))
	for k, v := range r.Params {
		m[k] = v.Value
	}
	return m
}

// Names returns the parameter names in the order the family's space lists them.
func (r *Resolved) Names() []string { return slices.Clone(r.names) }

// DeviceChoice says which device a Loader resolves for and why.
type DeviceChoice struct {
	// Key is the device key: the device found in the file, else the key
	// asked for ("" when none was given).
	Key string
	// How names what chose Key: "Options.Device", "env:<PREFIX>_DEVICE",
	// "Options.DeviceName", "env:<PREFIX>_DEVICE_NAME", "local device"
	// (Options.Local, LocalDevice() by default), "only device in file", or
	// "" when nothing did.
	How string
	// Matched is how the device whose entries apply was found: "key",
	// "only device in file", "name" (possibly with a note on compute
	// units, see Options.DeviceName), "family <family>" when only fallback
	// devices apply, or "none".
	Matched string
	// InFile reports whether the file holds Key.
	InFile bool
	// Backend is the device's backend: from the file, else Options.Backend,
	// else the first fallback device's, else "cpu". Kind is the device
	// record's space kind (paramfile.Device.Kind), or for a device not in
	// the file families.SpaceKind(Backend).
	Backend, Kind string
	// Family is the device family used to find fallback devices ("" for none).
	Family string
	// Fallbacks are the fallback devices in the order they are consulted.
	Fallbacks []string
}

// Loader resolves kernel parameters from one params file, the environment
// and the built-in defaults. It is immutable once made, so it is safe for
// concurrent use; environment variables that override parameters are read
// at every Resolve.
type Loader struct {
	path     string // file read, "" for bytes
	found    bool   // whether a file was read
	prefix   string
	lookup   func(string) (string, bool)
	device   DeviceChoice
	fams     map[string]*famState
	famNames []string
	chain    []*devState // the device itself (if in the file), then fallbacks
	knownEnv map[string]bool
	unread   map[string]string // variables known but not read for this device, and why
	envFams  map[string]string // a family's part of its variable names → the family
	warnings []string
	aliases  []Alias // validated; never modified
}

type famState struct {
	aliases   []aliasState // the aliases that apply to the family's space
	fam       *families.Family
	kind      string
	space     *families.Space // nil when the family has none for the device's kind
	params    []paramState
	names     []string
	useEnv    string // KERNTUNE_GEMV_NT_USE
	useSource string // env:KERNTUNE_GEMV_NT_USE
	// envNames are the variables Resolve reads, in this order: the
	// aliases', the parameters', then useEnv.
	envNames []string
	cache    resolveCache
}

type paramState struct {
	families.Param
	env       string // KERNTUNE_GEMV_NT_BN
	envSource string // env:KERNTUNE_GEMV_NT_BN
	def       int
}

type devState struct {
	kernels map[string]map[string]*entryState // family → entry key → entry
}

type entryState struct {
	params   map[string]int
	source   string // file:<device>/<family>/<entry key> or fallback:...
	use      string // the entry's "use", "" when absent
	baseline string // the name of the entry's baseline, "" when none
	// shapes and shapeUse are the entry's "shapes" and "shape_use" when it
	// has the latter: the use at exactly those shapes.
	shapes   [][]int
	shapeUse []string
}

// useAt is the entry's use for a query of shape: its shape_use value
// when shape is one of its shapes, else its use.
func (e *entryState) useAt(shape []int) string {
	for i, s := range e.shapes {
		if slices.Equal(s, shape) {
			return e.shapeUse[i]
		}
	}
	return e.use
}

// Open loads the params file named by opts.Path, else by the variable
// <PREFIX>_PARAMS, else DefaultFileName in the working directory. A file
// that does not exist is not an error: built-in defaults and environment
// variables apply (Loader.FileFound reports false). A file that exists but
// cannot be read or is invalid is an error naming the file and JSON path.
func Open(opts Options) (*Loader, error) {
	o, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	path, explicit := o.Path, o.Path != ""
	if path == "" {
		if v, ok := o.Lookup(o.EnvPrefix + "_PARAMS"); ok && v != "" {
			path, explicit = v, true
		} else {
			path = paramfile.DefaultFileName
		}
	}
	data, err := paramfile.ReadParams(path)
	var l *Loader
	switch {
	case errors.Is(err, fs.ErrNotExist):
		l, err = newLoader(nil, nil, path, o)
		if err == nil && explicit {
			l.warnings = append([]string{fmt.Sprintf("params file %s does not exist; built-in defaults apply", path)}, l.warnings...)
		}
	case err != nil:
		return nil, fmt.Errorf("params: %w", err)
	default:
		l, err = loadData(data, path, o)
	}
	if err == nil && o.Path == "" {
		delete(l.unread, o.EnvPrefix+"_PARAMS") // it was read, set or not
	}
	return l, err
}

// Load loads the params file at path; unlike Open, a missing file is an
// error (satisfying errors.Is(err, fs.ErrNotExist)), as Python's
// load(path, required=True). opts.Path is ignored.
func Load(path string, opts Options) (*Loader, error) {
	o, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	data, err := paramfile.ReadParams(path)
	if err != nil {
		return nil, fmt.Errorf("params: %w", err)
	}
	return loadData(data, path, o)
}

// LoadBytes loads params file contents; errors name "params data" instead of
// a file. opts.Path is ignored.
func LoadBytes(data []byte, opts Options) (*Loader, error) {
	o, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	return loadData(data, "", o)
}

func loadData(data []byte, name string, o Options) (*Loader, error) {
	f, unknown, err := paramfile.ParseNoting(data, name)
	if err != nil {
		return nil, err // a *PathError, naming the file (or "params data") and the JSON path
	}
	l, err := newLoader(f, unknown, name, o)
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (o Options) normalize() (Options, error) {
	if o.EnvPrefix == "" {
		o.EnvPrefix = DefaultEnvPrefix
	}
	if !identRE.MatchString(o.EnvPrefix) {
		return o, fmt.Errorf("params: Options.EnvPrefix %q is not an identifier", o.EnvPrefix)
	}
	if o.Lookup == nil {
		o.Lookup = os.LookupEnv
	}
	return o, nil
}

// Path returns the file the loader read or looked for ("" for LoadBytes).
func (l *Loader) Path() string { return l.path }

// FileFound reports whether a params file was read; false when Open found
// none and only environment variables and defaults apply.
func (l *Loader) FileFound() bool { return l.found }

// EnvPrefix returns the prefix of the variables the loader reads.
func (l *Loader) EnvPrefix() string { return l.prefix }

// Device says which device the loader resolves for.
func (l *Loader) Device() DeviceChoice {
	d := l.device
	d.Fallbacks = slices.Clone(d.Fallbacks)
	return d
}

// Families returns the names of the families the loader knows, sorted.
func (l *Loader) Families() []string { return slices.Clone(l.famNames) }

// Warnings returns what the loader noticed but did not treat as an error:
// a file that holds devices of which none was matched (with what was asked
// and every device of the file), entries ignored for an unknown dtype or
// shape class, an explicitly named file that does not exist.
func (l *Loader) Warnings() []string { return slices.Clone(l.warnings) }

// newLoader makes the loader of file f (nil for none), whose unknown fields
// parsing noted in unknown.
func newLoader(f *paramfile.File, unknown *paramfile.UnknownNotes, name string, o Options) (*Loader, error) {
	l := &Loader{path: name, found: f != nil, prefix: o.EnvPrefix, lookup: o.Lookup, knownEnv: map[string]bool{},
		unread: map[string]string{}, envFams: map[string]string{}}
	fams := families.Builtin()
	for _, key := range sortedKeys(o.Families) {
		fam := o.Families[key]
		if key == "" || fam == nil {
			return nil, fmt.Errorf("params: Options.Families[%q] is empty or nil", key)
		}
		if fam.Name != key {
			return nil, fmt.Errorf("params: Options.Families[%q] has Name %q", key, fam.Name)
		}
		fams[key] = fam
	}
	// Every variable the loader reads has one meaning: owner says which.
	owner := map[string]string{}
	claim := func(name, what string) error {
		if prev, ok := owner[name]; ok && prev != what {
			return fmt.Errorf("params: variable %s would be both %s and %s", name, prev, what)
		}
		owner[name] = what
		l.knownEnv[name] = true
		return nil
	}
	for _, v := range []string{"_PARAMS", "_DEVICE", "_DEVICE_NAME"} {
		claim(o.EnvPrefix+v, "the loader's "+strings.TrimPrefix(v, "_"))
	}
	// Open reads <PREFIX>_PARAMS only when the caller names no file.
	l.unread[o.EnvPrefix+"_PARAMS"] = "not read: the caller named the params file"
	if o.Device != "" {
		l.unread[o.EnvPrefix+"_DEVICE"] = "not read: Options.Device names the device"
	}
	byEnv := map[string]string{}
	for _, key := range sortedKeys(fams) {
		if err := validateFamily(fams[key]); err != nil {
			return nil, fmt.Errorf("params: family %s: %w", key, err)
		}
		e := envFamily(key)
		if other, ok := byEnv[e]; ok {
			return nil, fmt.Errorf("params: families %s and %s share the variable names %s_%s_*", other, key, o.EnvPrefix, e)
		}
		byEnv[e] = key
		l.envFams[e] = key
		if err := claim(EnvVarName(o.EnvPrefix, key, families.ReservedParamName), key+"'s choice of the baseline"); err != nil {
			return nil, err
		}
		for _, kind := range sortedKeys(fams[key].Spaces) {
			for _, p := range fams[key].Spaces[kind].Params {
				if err := claim(EnvVarName(o.EnvPrefix, key, p.Name), key+" parameter "+p.Name); err != nil {
					return nil, err
				}
			}
		}
	}
	// Settings of the kerntune tool itself (its Metal backend's MPS
	// baseline, its compile cache), not parameters; known so that they are
	// not reported as unused.
	for _, v := range []string{"_METAL_MPS", "_NO_CACHE", "_CACHE_DIR", "_CACHE_MAX"} {
		l.knownEnv[o.EnvPrefix+v] = true
	}
	l.famNames = sortedKeys(fams)
	if err := validateDefaults(fams, o.Defaults); err != nil {
		return nil, err
	}
	if err := validateAliases(fams, o.Aliases, claim); err != nil {
		return nil, err
	}
	l.aliases = o.Aliases
	if f != nil {
		if err := l.validateFile(f, unknown, name, fams); err != nil {
			return nil, err
		}
	}
	if err := l.chooseDevice(f, name, o); err != nil {
		return nil, err
	}
	if f != nil {
		if l.device.InFile {
			l.chain = append(l.chain, newDevState(f, l.device.Key, SourceFilePrefix))
		}
		for _, k := range l.device.Fallbacks {
			l.chain = append(l.chain, newDevState(f, k, SourceFallbackPrefix))
		}
	}
	l.fams = make(map[string]*famState, len(fams))
	for key, fam := range fams {
		fs := &famState{fam: fam, kind: l.device.Kind, useEnv: EnvVarName(o.EnvPrefix, key, "USE")}
		fs.useSource = SourceEnvPrefix + fs.useEnv
		if sp, ok := fam.Spaces[l.device.Kind]; ok && sp != nil {
			fs.space = sp
			over := o.Defaults[key]
			for _, p := range sp.Params {
				ps := paramState{Param: p, env: EnvVarName(o.EnvPrefix, key, p.Name), def: p.Default}
				ps.envSource = SourceEnvPrefix + ps.env
				if v, ok := over[p.Name]; ok {
					ps.def = v
				}
				fs.params = append(fs.params, ps)
				fs.names = append(fs.names, p.Name)
			}
			fs.aliases = aliasesFor(key, sp, o.Aliases)
		}
		for _, a := range fs.aliases {
			fs.envNames = append(fs.envNames, a.Name)
		}
		for _, p := range fs.params {
			fs.envNames = append(fs.envNames, p.env)
		}
		fs.envNames = append(fs.envNames, fs.useEnv)
		l.fams[key] = fs
		l.noteUnread(key, fam, fs)
	}
	return l, nil
}

// noteUnread records the variables of a family that Resolve never reads for
// this device, since its backend has no such parameter (or none at all),
// and why; UnusedEnvVars reports those that are set.
func (l *Loader) noteUnread(key string, fam *families.Family, fs *famState) {
	dev := "backend " + l.device.Backend
	if l.device.Key != "" {
		dev = fmt.Sprintf("%s, backend %s", l.device.Key, l.device.Backend)
	}
	if fs.space == nil {
		why := fmt.Sprintf("%s has no parameters for %s backends (the device: %s)", key, fs.kind, dev)
		l.unread[EnvVarName(l.prefix, key, families.ReservedParamName)] = why
		for _, kind := range sortedKeys(fam.Spaces) {
			for _, p := range fam.Spaces[kind].Params {
				l.unread[EnvVarName(l.prefix, key, p.Name)] = why
			}
		}
		return
	}
	for _, kind := range sortedKeys(fam.Spaces) {
		for _, p := range fam.Spaces[kind].Params {
			if _, ok := fs.space.Param(p.Name); ok {
				continue
			}
			name := EnvVarName(l.prefix, key, p.Name)
			if _, done := l.unread[name]; !done {
				l.unread[name] = fmt.Sprintf("%s %s is a parameter of %s backends, not of %s ones (the device: %s; its %s parameters: %s)",
					key, p.Name, kind, fs.kind, dev, key, strings.Join(fs.names, ", "))
			}
		}
	}
}

func newDevState(f *paramfile.File, key, prefix string) *devState {
	d := &devState{kernels: map[string]map[string]*entryState{}}
	for fam, entries := range f.Devices[key].Kernels {
		m := make(map[string]*entryState, len(entries))
		for ek, e := range entries {
			if e == nil {
				continue
			}
			es := &entryState{params: e.Params, source: prefix + key + "/" + fam + "/" + ek, use: e.Use}
			if e.Baseline != nil {
				es.baseline = e.Baseline.Name
			}
			if len(e.ShapeUse) == len(e.Shapes) {
				es.shapes, es.shapeUse = e.Shapes, e.ShapeUse
			}
			m[ek] = es
		}
		d.kernels[fam] = m
	}
	return d
}

// validateFamily checks a family descriptor, so that Resolve can rely on it.
func validateFamily(f *families.Family) error {
	if f.Classify == nil {
		return errors.New("Classify is nil")
	}
	for _, kind := range sortedKeys(f.Spaces) {
		s := f.Spaces[kind]
		if s == nil {
			return fmt.Errorf("space %q is nil", kind)
		}
		seen := map[string]bool{}
		for _, p := range s.Params {
			switch {
			case !families.ValidParamName(p.Name):
				return fmt.Errorf("space %s: parameter name %q is not an upper-case identifier", kind, p.Name)
			case p.Name == families.ReservedParamName:
				return fmt.Errorf("space %s: parameter name %s is reserved (<PREFIX>_<FAMILY>_USE chooses between the tuned kernel and the baseline)", kind, p.Name)
			case seen[p.Name]:
				return fmt.Errorf("space %s: parameter %s is listed twice", kind, p.Name)
			case len(p.Values) == 0:
				return fmt.Errorf("space %s: parameter %s has no allowed values", kind, p.Name)
			case !p.Allowed(p.Default):
				return fmt.Errorf("space %s: default %s=%d is not among its allowed values (%s)", kind, p.Name, p.Default, p.ValuesString())
			}
			seen[p.Name] = true
		}
	}
	return nil
}

func validateDefaults(fams map[string]*families.Family, defaults map[string]map[string]int) error {
	for _, key := range sortedKeys(defaults) {
		fam, ok := fams[key]
		if !ok {
			return fmt.Errorf("params: Options.Defaults: %w %q", ErrUnknownFamily, key)
		}
		for _, name := range sortedKeys(defaults[key]) {
			v := defaults[key][name]
			found := false
			for _, kind := range sortedKeys(fam.Spaces) {
				p, ok := fam.Spaces[kind].Param(name)
				if !ok {
					continue
				}
				found = true
				if !p.Allowed(v) {
					return fmt.Errorf("params: Options.Defaults[%q][%q] = %d is not allowed on %s backends (allowed: %s)", key, name, v, kind, p.ValuesString())
				}
			}
			if !found {
				return fmt.Errorf("params: Options.Defaults[%q]: family %s has no parameter %s", key, key, name)
			}
		}
	}
	return nil
}

// validateFile checks every entry of every family the loader knows on every
// device whose kind of backend has a space for that family: the entry key,
// the parameter values, and, for an entry that sets every parameter, the
// family's Check (with the shape of an exact-shape entry). Unknown
// families and families without a space for the device's backend are
// accepted as they are. A parameter the family does not have (a newer
// kerntune's, or a typo) is dropped from the entry, whose other parameters
// apply, and noted in unknown; the warnings come in this order: unknown
// fields and parameters, then entries ignored for their dtype or class.
func (l *Loader) validateFile(f *paramfile.File, unknown *paramfile.UnknownNotes, name string, fams map[string]*families.Family) error {
	fail := func(path, format string, args ...any) error {
		return &paramfile.PathError{File: name, Path: path, Msg: fmt.Sprintf(format, args...)}
	}
	if unknown == nil {
		unknown = &paramfile.UnknownNotes{}
	}
	var ignored []string // entries ignored for their dtype or shape class
	for _, dk := range sortedKeys(f.Devices) {
		dev := f.Devices[dk]
		kind := dev.Kind()
		for _, fk := range sortedKeys(dev.Kernels) {
			fam, ok := fams[fk]
			if !ok {
				continue
			}
			space, ok := fam.Spaces[kind]
			if !ok {
				continue
			}
			fp := paramfile.ChildPath(paramfile.ChildPath(paramfile.ChildPath("devices", dk), "kernels"), fk)
			for _, ek := range sortedKeys(dev.Kernels[fk]) {
				e := dev.Kernels[fk][ek]
				ep := paramfile.ChildPath(fp, ek)
				dtype, suffix, _ := strings.Cut(ek, "/")
				var shape []int
				if families.LooksLikeShape(suffix) {
					s, err := families.ParseShape(suffix)
					if err != nil {
						return fail(ep, "bad exact-shape entry key: %v", err)
					}
					if _, err := classify(fam, s); err != nil {
						return fail(ep, "bad exact-shape entry key: %v", err)
					}
					if c := families.ShapeString(s); c != suffix {
						return fail(ep, "exact-shape entry key is not canonical; write %s", paramfile.EntryKey(dtype, c))
					}
					shape = s
				} else if len(fam.Classes) > 0 && !hasClass(fam, suffix) {
					ignored = append(ignored, fmt.Sprintf("%s: %s has no shape class %q; entry ignored", describe(name, ep), fk, suffix))
				}
				if !families.ValidDType(dtype) {
					ignored = append(ignored, fmt.Sprintf("%s: unknown dtype %q (known: %s); entry ignored", describe(name, ep), dtype, strings.Join(families.DTypes(), ", ")))
				}
				pp := paramfile.ChildPath(ep, "params")
				for _, pn := range sortedKeys(e.Params) {
					p, ok := space.Param(pn)
					if !ok {
						unknown.Add("param\x00"+fk+"\x00"+kind+"\x00"+pn, paramfile.ChildPath(pp, pn),
							fmt.Sprintf("%s has no parameter %s on %s backends (it has %s)", fk, pn, kind, strings.Join(paramNames(space), ", ")), "entry", true)
						delete(e.Params, pn) // f is this loader's own copy
						continue
					}
					if v := e.Params[pn]; !p.Allowed(v) {
						return fail(paramfile.ChildPath(pp, pn), "%d is not an allowed value of %s %s on %s backends (allowed: %s)", v, fk, pn, kind, p.ValuesString())
					}
				}
				if space.Check != nil && len(e.Params) == len(space.Params) {
					if err := check(space, shape, e.Params); err != nil {
						return fail(pp, "breaks the constraints of %s: %v", fk, err)
					}
				}
			}
		}
	}
	l.warnings = append(l.warnings, unknown.Warnings(name)...)
	l.warnings = append(l.warnings, ignored...)
	return nil
}

func describe(file, path string) string { return paramfile.FileLabel(file) + ": " + path }

func hasClass(f *families.Family, name string) bool {
	for _, c := range f.Classes {
		if c.Name == name {
			return true
		}
	}
	return false
}

func paramNames(s *families.Space) []string {
	names := make([]string, len(s.Params))
	for i, p := range s.Params {
		names[i] = p.Name
	}
	return names
}

// chooseDevice finds the device whose entries apply, its backend and its
// fallback devices. The order: the key (Options.Device, else
// $<PREFIX>_DEVICE) if the file holds it; the name ($<PREFIX>_DEVICE_NAME,
// else Options.DeviceName) with the nearest compute units; the file's only
// device when nothing names one, unless onlyDeviceFits finds it another
// machine's; the local device (Options.Local) when
// nothing names one; else no device, with the fallback devices of the
// family (Options.DeviceFamily, else the local device's).
func (l *Loader) chooseDevice(f *paramfile.File, name string, o Options) error {
	d := &l.device
	if o.ComputeUnits < 0 {
		return fmt.Errorf("params: Options.ComputeUnits is %d; it must be 0 (unknown) or positive", o.ComputeUnits)
	}
	key, keyHow := o.Device, "Options.Device"
	if key == "" {
		if x, ok := o.Lookup(o.EnvPrefix + "_DEVICE"); ok {
			key, keyHow = strings.TrimSpace(x), SourceEnvPrefix+o.EnvPrefix+"_DEVICE"
		}
	}
	devName, nameHow := strings.TrimSpace(o.DeviceName), "Options.DeviceName"
	if x, ok := o.Lookup(o.EnvPrefix + "_DEVICE_NAME"); ok && strings.TrimSpace(x) != "" {
		devName, nameHow = strings.TrimSpace(x), SourceEnvPrefix+o.EnvPrefix+"_DEVICE_NAME"
	}
	backend, family := o.Backend, o.DeviceFamily
	var local DeviceID
	useLocal := false
	if key == "" && devName == "" && f != nil && len(f.Devices) > 0 {
		if o.Local != nil {
			local = *o.Local
		} else {
			local = LocalDevice()
		}
		useLocal = local.Backend != "" && (o.Backend == "" || o.Backend == local.Backend)
	}

	found, only, notOnly := "", "", ""
	if f != nil && len(f.Devices) == 1 {
		for k := range f.Devices {
			only = k
		}
	}
	switch {
	case f == nil:
	case key != "" && f.Devices[key] != nil:
		found, d.How, d.Matched = key, keyHow, MatchedKey
	case devName != "":
		m := matchName(f, devName, o.ComputeUnits, "Options.ComputeUnits", o.Backend, localGPUFunc(o.LocalGPU))
		if m.key != "" {
			found, d.How, d.Matched = m.key, nameHow, m.matched
			if w := m.warning(fmt.Sprintf("device name %q (%s)", devName, nameHow), paramfile.FileLabel(name), o.EnvPrefix, "Options.ComputeUnits"); w != "" {
				l.warnings = append(l.warnings, w)
			}
		}
	case key != "":
	case only != "":
		// The only device is another machine's when its backend or model is
		// not this one's: then it is no match, only a possible fallback.
		var same bool
		same, notOnly = onlyDeviceFits(f.Devices[only], only, o.Backend, local, useLocal)
		if notOnly == "" {
			found, d.How, d.Matched = only, MatchedOnly, MatchedOnly
			if !same {
				l.warnings = append(l.warnings, fmt.Sprintf("the only device in %s, %s, is not the local device %s but has its backend and model; its entries apply (set %s_DEVICE=%s to choose it by key)",
					paramfile.FileLabel(name), describeDevice(only, f.Devices[only]), describeLocal(local), o.EnvPrefix, only))
			}
		}
	case useLocal && local.Key != "" && f.Devices[local.Key] != nil && f.Devices[local.Key].Backend == local.Backend:
		found, d.How, d.Matched = local.Key, "local device", MatchedKey
	case useLocal:
		m := matchName(f, local.Name, local.ComputeUnits, "local device", local.Backend, nil)
		if m.key != "" {
			found, d.How, d.Matched = m.key, "local device", m.matched
			if w := m.warning(fmt.Sprintf("the local device's name %q", local.Name), paramfile.FileLabel(name), o.EnvPrefix, ""); w != "" {
				l.warnings = append(l.warnings, w)
			}
		}
	}

	var dev *paramfile.Device
	switch {
	case found != "":
		dev = f.Devices[found]
		d.Key, d.InFile = found, true
		d.Backend, d.Family = dev.Backend, dev.Family
		if o.Backend != "" && o.Backend != dev.Backend && families.SpaceKind(o.Backend) != dev.Kind() {
			return fmt.Errorf("params: Options.Backend is %q but device %q in %s has backend %q", o.Backend, d.Key, paramfile.FileLabel(name), dev.Backend)
		}
	default:
		if useLocal {
			if backend == "" {
				backend = local.Backend
			}
			if family == "" {
				family = local.Family
			}
		}
		d.Backend, d.Family = backend, family
		if key != "" {
			d.Key, d.How = key, keyHow
		}
	}
	d.Fallbacks = siblings(f, d.Key, d.Family, d.Backend)
	if d.Backend == "" {
		d.Backend = "cpu"
		if len(d.Fallbacks) > 0 {
			d.Backend = f.Devices[d.Fallbacks[0]].Backend
			d.Fallbacks = siblings(f, d.Key, d.Family, d.Backend)
		}
	}
	d.Kind = families.SpaceKind(d.Backend)
	if dev != nil {
		d.Kind = dev.Kind()
		return nil
	}
	d.Matched = MatchedNone
	if len(d.Fallbacks) > 0 {
		d.Matched = "family " + d.Family
	}
	if f == nil || len(f.Devices) == 0 {
		return nil
	}
	then := "built-in defaults apply"
	if len(d.Fallbacks) > 0 {
		then = fmt.Sprintf("using fallback devices %s (family %s)", strings.Join(d.Fallbacks, ", "), d.Family)
	}
	holds := "its devices: " + describeDevices(f)
	var asked []string
	if key != "" {
		asked = append(asked, fmt.Sprintf("key %q (%s)", key, keyHow))
	}
	if devName != "" {
		n := fmt.Sprintf("name %q (%s)", devName, nameHow)
		if o.Backend != "" {
			n += " on backend " + o.Backend
		}
		asked = append(asked, n)
	}
	switch {
	case notOnly != "":
		l.warnings = append(l.warnings, fmt.Sprintf("the only device in %s, %s, %s; %s (set %s_DEVICE or %s_DEVICE_NAME, or Options.Device or Options.DeviceName, to use it)",
			paramfile.FileLabel(name), describeDevice(only, f.Devices[only]), notOnly, then, o.EnvPrefix, o.EnvPrefix))
	case key != "" && devName == "":
		l.warnings = append(l.warnings, fmt.Sprintf("device %q (%s) is not in %s; %s; %s", key, keyHow, paramfile.FileLabel(name), then, holds))
	case len(asked) > 0:
		l.warnings = append(l.warnings, fmt.Sprintf("no device in %s matches %s; %s; %s", paramfile.FileLabel(name), strings.Join(asked, " or "), then, holds))
	default:
		why := ""
		if useLocal {
			why = fmt.Sprintf(", and none is the local device (key %q, name %q)", local.Key, local.Name)
		}
		l.warnings = append(l.warnings, fmt.Sprintf("%s holds %d devices and none was chosen%s (set %s_DEVICE or %s_DEVICE_NAME, or Options.Device or Options.DeviceName); %s; %s",
			paramfile.FileLabel(name), len(f.Devices), why, o.EnvPrefix, o.EnvPrefix, then, holds))
	}
	return nil
}

// localGPUFunc is how matchName asks for this machine's GPU: LocalGPU()
// when opt is nil, nothing when it points to a zero DeviceID, else opt.
func localGPUFunc(opt *DeviceID) func() (DeviceID, error) {
	switch {
	case opt == nil:
		return LocalGPU
	case *opt == DeviceID{}:
		return nil
	}
	g := *opt
	return func() (DeviceID, error) { return g, nil }
}

// onlyDeviceFits says whether the file's only device dev (key k) may stand
// for the device the loader runs for when nothing names one. It does not
// (why says so) when its backend is not Options.Backend, or, with the local
// device known (useLocal), when its backend or its model is not the local
// device's: the model is the name (see FoldDeviceName) and, when both
// record one, the family; a key equal to the local device's is the same
// model. same reports whether it is the local device itself (same key), or
// nothing is known to compare it with.
func onlyDeviceFits(dev *paramfile.Device, k, backend string, local DeviceID, useLocal bool) (same bool, why string) {
	if dev == nil {
		return true, ""
	}
	if backend != "" && dev.Backend != backend {
		return false, fmt.Sprintf("is of backend %s, not %s (Options.Backend)", dev.Backend, backend)
	}
	if !useLocal {
		return true, ""
	}
	if dev.Backend != local.Backend {
		return false, fmt.Sprintf("is not the local device %s: another backend", describeLocal(local))
	}
	if local.Key != "" && k == local.Key {
		return true, ""
	}
	name := FoldDeviceName(local.Name)
	if name == "" || FoldDeviceName(dev.Name) != name || dev.Family != "" && local.Family != "" && dev.Family != local.Family {
		return false, fmt.Sprintf("is not the local device %s: another model", describeLocal(local))
	}
	return false, ""
}

// siblings lists the fallback devices for a device of the given family and
// backend: the other devices of the same family whose backend has the same
// kind of space (every kind when backend is empty), those with the same
// backend first, each group sorted by key.
func siblings(f *paramfile.File, self, family, backend string) []string {
	if f == nil || family == "" {
		return nil
	}
	var same, other []string
	for _, k := range sortedKeys(f.Devices) {
		dv := f.Devices[k]
		if k == self || dv == nil || dv.Family != family {
			continue
		}
		if backend != "" && dv.Backend != backend && dv.Kind() != families.SpaceKind(backend) {
			continue
		}
		if dv.Backend == backend {
			same = append(same, k)
		} else {
			other = append(other, k)
		}
	}
	return append(same, other...)
}

// classify runs a family's Classify, turning a panic into an error.
func classify(f *families.Family, shape []int) (class string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: Classify panicked: %v", f.Name, r)
		}
	}()
	return f.Classify(shape)
}

// check runs a space's Check, turning a panic into an error.
func check(s *families.Space, shape []int, p map[string]int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("Check panicked: %v", r)
		}
	}()
	return s.Check(shape, p)
}

// Resolve returns the parameters to launch family with, for dtype and shape,
// each with its source. Per parameter, the first of these that sets it wins:
//
//  1. the variable <PREFIX>_<FAMILY>_<PARAM>;
//  2. the device's exact-shape entry, <dtype>/<dims joined by x>;
//  3. the device's shape-class entry, <dtype>/<class>;
//  4. the same two entries on each fallback device in turn;
//  5. the built-in default (Options.Defaults, else the family's).
//
// Resolved.UseBaseline comes from <PREFIX>_<FAMILY>_USE, else the first
// matching entry's "use" (see Resolved).
//
// A variable that is not a base-10 integer or not an allowed value, or a
// <PREFIX>_<FAMILY>_USE other than baseline or tuned, is an *EnvError, and so is a set of variables that breaks the family's Check
// for this shape even with the defaults for the other parameters. When
// values taken from the file break it, Resolve keeps the largest set of
// matching entries that passes, preferring higher ones (see degrade), down to
// the defaults alone. An unknown family or dtype, an invalid shape
// or a family with no space for the device's backend are errors wrapping
// ErrUnknownFamily, ErrUnknownDType, ErrInvalidShape or ErrNoSpace.
func (l *Loader) Resolve(family, dtype string, shape []int) (*Resolved, error) {
	x, r, err := l.launch(family, dtype, shape)
	switch {
	case err != nil:
		return nil, err
	case r != nil:
		return r, nil // resolved now: the cache holds its own copy
	}
	return x.r.clone(), nil
}

// Launch is Resolve for hot paths: the same result, as an immutable value
// that the loader shares between callers instead of copying it. A shape
// resolved before with the same values of the variables costs no
// allocation (BenchmarkLaunch); Resolve copies what it returns, so that a
// caller may change it.
func (l *Loader) Launch(family, dtype string, shape []int) (*Launch, error) {
	x, _, err := l.launch(family, dtype, shape)
	return x, err
}

// launch answers from the cache, else resolves the shape and caches the
// result; r is the fresh result, not shared, when it resolved (nil when
// the cache answered).
func (l *Loader) launch(family, dtype string, shape []int) (x *Launch, r *Resolved, err error) {
	fs := l.fams[family]
	if fs == nil {
		return nil, nil, fmt.Errorf("params: %w %q (known: %s)", ErrUnknownFamily, family, strings.Join(l.famNames, ", "))
	}
	if !families.ValidDType(dtype) {
		return nil, nil, fmt.Errorf("params: %w %q (known: %s)", ErrUnknownDType, dtype, strings.Join(families.DTypes(), ", "))
	}
	// The variables are read once, here; the result depends on nothing
	// else that can change, so a shape resolved before with the same
	// values is answered from the cache.
	var eb [8]envValue
	env := eb[:0]
	for _, name := range fs.envNames {
		v, ok := l.lookup(name)
		env = append(env, envValue{v, ok})
	}
	var kb [64]byte
	key := families.AppendShape(append(append(kb[:0], dtype...), '/'), shape)
	if x := fs.cache.get(key, env); x != nil {
		return x, nil, nil
	}
	r, err = l.resolve(fs, family, dtype, shape, env)
	if err != nil {
		return nil, nil, err
	}
	return fs.cache.put(string(key), env, r), r, nil
}

// resolve is Resolve without the cache, with the values of the variables
// (fs.envNames) already read.
func (l *Loader) resolve(fs *famState, family, dtype string, shape []int, envVals []envValue) (*Resolved, error) {
	class, err := classify(fs.fam, shape)
	if err != nil {
		return nil, fmt.Errorf("params: %w: %w", ErrInvalidShape, err)
	}
	if fs.space == nil {
		return nil, fmt.Errorf("params: %w: %s has no parameters for %s backends (device %q, backend %q)", ErrNoSpace, family, fs.kind, l.device.Key, l.device.Backend)
	}

	// Entry keys are built in stack buffers; map lookups with string(b) do not allocate.
	var eb, cb [64]byte
	exact := families.AppendShape(append(append(eb[:0], dtype...), '/'), shape)
	cls := append(append(append(cb[:0], dtype...), '/'), class...)
	var lb [8]*entryState
	layers := lb[:0]
	for _, d := range l.chain {
		em := d.kernels[family]
		if em == nil {
			continue
		}
		if e := em[string(exact)]; e != nil {
			layers = append(layers, e)
		}
		if e := em[string(cls)]; e != nil {
			layers = append(layers, e)
		}
	}

	r := &Resolved{
		Device: l.device.Key, Backend: l.device.Backend, Family: family, DType: dtype,
		Shape: slices.Clone(shape), Class: class, Params: make(map[string]Value, len(fs.params)), names: fs.names,
		Matched: l.device.Matched, UseSource: SourceDefault,
	}
	// envVals holds the aliases' variables, then the parameters', then USE (see envNames).
	aliasVals, paramVals, useVal := envVals[:len(fs.aliases)], envVals[len(fs.aliases):len(fs.aliases)+len(fs.params)], envVals[len(envVals)-1]
	var env, aliasVars []EnvVar
	var aliased map[string]Value // parameter → value set by an alias
	for i, a := range fs.aliases {
		raw, ok := aliasVals[i].v, aliasVals[i].ok
		if !ok || strings.TrimSpace(raw) == "" {
			continue
		}
		vals, err := a.parse(family, fs.kind, raw)
		if err != nil {
			return nil, err
		}
		aliasVars = append(aliasVars, EnvVar{a.Name, raw})
		for i, p := range a.params {
			if _, done := aliased[p.Name]; !done {
				if aliased == nil {
					aliased = map[string]Value{}
				}
				aliased[p.Name] = Value{vals[i], a.source}
			}
		}
	}
	for i := range fs.params {
		p := &fs.params[i]
		if raw, ok := paramVals[i].v, paramVals[i].ok; ok && strings.TrimSpace(raw) != "" {
			v, err := p.parseEnv(family, fs.kind, raw)
			if err != nil {
				return nil, err
			}
			r.Params[p.Name] = Value{v, p.envSource}
			env = append(env, EnvVar{p.env, raw})
			continue
		}
		if v, ok := aliased[p.Name]; ok {
			r.Params[p.Name] = v
			continue
		}
		r.Params[p.Name] = fromLayers(p, layers)
	}
	for _, v := range aliasVars {
		// An alias whose every parameter has its own variable set counts for nothing.
		for _, name := range fs.names {
			if r.Params[name].Source == SourceEnvPrefix+v.Name {
				env = append(env, v)
				break
			}
		}
	}
	if len(layers) > 0 {
		r.UseBaseline, r.Baseline, r.UseSource = layers[0].useAt(shape) == paramfile.UseBaseline, layers[0].baseline, layers[0].source
	}
	if raw, ok := useVal.v, useVal.ok; ok && strings.TrimSpace(raw) != "" {
		switch strings.TrimSpace(raw) {
		case paramfile.UseBaseline:
			r.UseBaseline = true
		case paramfile.UseTuned:
			r.UseBaseline = false
		default:
			return nil, &EnvError{Vars: []EnvVar{{fs.useEnv, raw}},
				Msg: fmt.Sprintf("not an allowed value; %s chooses between the tuned %s kernel and the baseline; allowed: %s, %s", fs.useEnv, family, paramfile.UseBaseline, paramfile.UseTuned)}
		}
		r.UseSource = fs.useSource
	}
	if fs.space.Check == nil {
		return r, nil
	}
	err = check(fs.space, shape, r.Ints())
	if err != nil {
		err = r.degrade(fs, shape, layers, err)
	}
	switch {
	case err == nil:
		return r, nil
	case len(env) > 0:
		return nil, &EnvError{Vars: env, Msg: fmt.Sprintf("breaks the constraints of %s for shape %s (class %s), even with the defaults for the other parameters: %v",
			family, families.ShapeString(shape), class, err)}
	}
	return nil, fmt.Errorf("params: %w: %s for shape %s: %w", ErrDefaults, family, families.ShapeString(shape), err)
}

// degrade handles a set that breaks the family's constraints, say because a
// class entry does not suit this shape: it tries the subsets of the matching
// entries (up to the first maxDegrade), those that keep higher entries first
// (the entries ordered as bits of a number, highest first, counting down),
// down to the defaults alone, keeping the variables' values. It returns the
// last Check error (err when there is no subset to try), nil when a subset
// passed and r holds it.
func (r *Resolved) degrade(fs *famState, shape []int, layers []*entryState, err error) error {
	const maxDegrade = 8
	n := min(len(layers), maxDegrade)
	var sb [maxDegrade]*entryState
	for mask := 1<<n - 2; mask >= 0; mask-- {
		sub := sb[:0]
		for i := 0; i < n; i++ {
			if mask&(1<<(n-1-i)) != 0 {
				sub = append(sub, layers[i])
			}
		}
		for i := range fs.params {
			p := &fs.params[i]
			if !strings.HasPrefix(r.Params[p.Name].Source, SourceEnvPrefix) {
				r.Params[p.Name] = fromLayers(p, sub)
			}
		}
		if err = check(fs.space, shape, r.Ints()); err == nil {
			return nil
		}
	}
	return err
}

func fromLayers(p *paramState, layers []*entryState) Value {
	for _, e := range layers {
		if v, ok := e.params[p.Name]; ok {
			return Value{v, e.source}
		}
	}
	return Value{p.def, SourceDefault}
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
