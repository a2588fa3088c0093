package device

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/params/families"
)

// A backend is added by one package that calls Register or RegisterOptions
// from init, and one blank import in cmd/kerntune/backends.go; every layer
// above learns what it needs from its Traits (see docs/design/architecture.md,
// "Adding a backend").

// Opener creates a backend; it returns an error wrapping ErrUnavailable when
// the device or its driver is missing.
type Opener func() (Backend, error)

// Options are the settings a backend opens with, by the names its
// Traits.Options list ("math_mode", "allow_tf32"); nil opens it with its
// defaults. Values are strings, as flags give them; a boolean is "1".
type Options map[string]string

// OptionMathMode is the option of a backend that compiles kernels in a
// math mode (Metal's safe, relaxed, fast); the tuner records the mode of
// such a backend in every entry (RecordBackendOptions).
const OptionMathMode = "math_mode"

// OptionsOpener creates a backend with options; only the options its
// Traits.Options name reach it (OpenWith refuses others).
type OptionsOpener func(Options) (Backend, error)

// ErrUnavailable reports that a backend cannot run on this machine.
var ErrUnavailable = fmt.Errorf("backend not available on this machine")

// ErrUnknownBackend reports a backend name that is not registered.
var ErrUnknownBackend = errors.New("unknown backend")

// ErrUnknownOption reports an option the backend does not take.
var ErrUnknownOption = errors.New("option not taken by the backend")

// Space kinds: the GPU backends share kernel bodies and so parameters.
const (
	SpaceCPU = families.SpaceCPU
	SpaceGPU = families.SpaceGPU
)

// Traits are what the layers above a backend know of it without opening
// it, so that no layer keeps its own list of backend names.
type Traits struct {
	// Space is the kind of parameter space its candidates use (SpaceCPU,
	// SpaceGPU), written into the device record of every file it tunes
	// for (paramfile.Device.Space), so that no loader keeps a table of
	// backends. Left empty, RegisterOptions sets it from API: a backend
	// that builds generated GPU sources uses the GPU space, one that builds
	// none the CPU space.
	Space string
	// API is the generated source the backend builds (gpu.CUDA,
	// gpu.Metal, gpu.OpenCL); "" for a backend that builds none (the
	// CPU). A spec kernel runs on a backend when it has sources for its
	// API, whatever the backend is named.
	API gpu.API
	// Options are the names of the Options it takes (RegisterOptions).
	Options []string
	// Flags are the command-line flags through which it takes them: the
	// commands that open a backend (tune, verify, bench, the worker)
	// offer every registered backend's flags and refuse one that the
	// backend they opened does not take, so that no command names a
	// backend's options.
	Flags []Flag
	// Isolate: tune runs its candidates in a worker process unless told
	// otherwise (one faulting GPU kernel can poison a context for good).
	Isolate bool
	// AutoRank orders the backends that "--backend auto" tries, lowest
	// first; 0: auto never picks it.
	AutoRank int
}

// Flag is a command-line flag that sets one of a backend's Options.
type Flag struct {
	// Name is the flag's name without dashes ("metal-math-mode").
	Name string
	// Option is the option it sets (one of Traits.Options).
	Option string
	// Set, when not empty, makes a boolean flag that sets Option to Set
	// ("1", or "fast" for --metal-fast-math); empty makes a flag that
	// takes the option's value.
	Set string
	// Values are the values a flag that takes one accepts; nil: any.
	Values []string
	// Usage is the flag's help text.
	Usage string
	// Elsewhere ends the refusal of the flag on another backend, in
	// parentheses: "name --backend metal on a Mac".
	Elsewhere string
}

// Takes says whether the backend takes the named option.
func (t Traits) Takes(option string) bool { return slices.Contains(t.Options, option) }

type registration struct {
	open   OptionsOpener
	traits Traits
}

var (
	registryMu sync.Mutex
	registry   = map[string]registration{}
)

// Register makes a backend that takes no options available by name;
// backends call it from init.
func Register(name string, open Opener, t Traits) {
	RegisterOptions(name, func(Options) (Backend, error) { return open() }, t)
}

// RegisterOptions makes a backend available by name with the options
// t.Options names; backends call it from init.
func RegisterOptions(name string, open OptionsOpener, t Traits) {
	if t.Space == "" {
		t.Space = SpaceGPU
		if t.API == "" {
			t.Space = SpaceCPU
		}
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	registry[name] = registration{open: open, traits: t}
}

func lookup(name string) (registration, error) {
	registryMu.Lock()
	r, ok := registry[name]
	registryMu.Unlock()
	if !ok {
		return r, fmt.Errorf("%w %q (built in: %s)", ErrUnknownBackend, name, strings.Join(Backends(), ", "))
	}
	return r, nil
}

// Open opens the named backend with its defaults; an unregistered name
// gives an error wrapping ErrUnknownBackend.
func Open(name string) (Backend, error) { return OpenWith(name, nil) }

// OpenWith opens the named backend with the options it takes: those of o
// that its Traits.Options do not name are left out, so one set of options
// (from the command line's flags) opens any backend. Callers that must
// refuse an option a backend does not take check Traits.Takes first.
func OpenWith(name string, o Options) (Backend, error) {
	r, err := lookup(name)
	if err != nil {
		return nil, err
	}
	var taken Options
	for k, v := range o {
		if r.traits.Takes(k) {
			if taken == nil {
				taken = Options{}
			}
			taken[k] = v
		}
	}
	return r.open(taken)
}

// TraitsOf returns the named backend's traits; an unregistered name gives
// an error wrapping ErrUnknownBackend.
func TraitsOf(name string) (Traits, error) {
	r, err := lookup(name)
	return r.traits, err
}

// Backends lists the registered backend names.
func Backends() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	var names []string
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// AutoOrder lists the backends "--backend auto" tries, in order of
// AutoRank; with a space kind, only those of that kind ("" for all).
func AutoOrder(space string) []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	var names []string
	for n, r := range registry {
		if r.traits.AutoRank > 0 && (space == "" || r.traits.Space == space) {
			names = append(names, n)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		ri, rj := registry[names[i]].traits.AutoRank, registry[names[j]].traits.AutoRank
		if ri != rj {
			return ri < rj
		}
		return names[i] < names[j]
	})
	return names
}

// OpenAuto is "--backend auto": it opens the backends of AutoOrder(space)
// with open, in order, and returns the first that opens. skipped, when not
// nil, is told of each one passed over and why. With none open it returns
// nil: what that means is the caller's (tune refuses, check runs no device
// check).
func OpenAuto(space string, open func(name string) (Backend, error), skipped func(name string, err error)) Backend {
	for _, n := range AutoOrder(space) {
		b, err := open(n)
		if err == nil {
			return b
		}
		if skipped != nil {
			skipped(n, err)
		}
	}
	return nil
}
