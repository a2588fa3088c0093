package search

import (
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Param is a named parameter and its allowed values.
type Param struct {
	Name   string
	Values []int
}

// Constraint rejects candidates: Check returns nil for a valid candidate,
// or an error saying why it is not.
type Constraint struct {
	Name  string
	Check func(c Candidate) error
	// TuneOnly constraints exclude candidates from tuning that are still
	// correct to run, e.g. an emulated variant; verification lifts them.
	TuneOnly bool
	// PerShape constraints hold for one shape of the task only (a tiling
	// that must divide it): the rest are shared by every entry of a family.
	PerShape bool
	// Narrow constraints only narrow what a run searches (tune --where): a
	// candidate failing one is still valid, so parameters recorded by an
	// earlier run still compete with the narrowed run's winner.
	Narrow bool
}

// Space is a cartesian product of parameters filtered by constraints.
type Space struct {
	Params      []Param
	Constraints []Constraint
	// Within, when not nil, is the enumeration of the same parameters under
	// every constraint that is neither PerShape nor TuneOnly (those shared
	// by the entries of a run): Enumerate then checks only the PerShape and
	// TuneOnly ones on it rather than walking the product, which for a GEMM
	// space is millions of combinations, seconds on a small machine for
	// every entry.
	Within []Candidate
}

// Candidate assigns a value to every parameter of a space.
type Candidate map[string]int

// Clone returns a copy of c.
func (c Candidate) Clone() Candidate {
	d := make(Candidate, len(c))
	for k, v := range c {
		d[k] = v
	}
	return d
}

// Key is the canonical string of a candidate: NAME=value pairs sorted by name,
// joined by commas, e.g. "BN=8,TG=128".
func (c Candidate) Key() string {
	names := make([]string, 0, len(c))
	for n := range c {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(n)
		b.WriteByte('=')
		b.WriteString(strconv.Itoa(c[n]))
	}
	return b.String()
}

// ParseKey inverts Key.
func ParseKey(key string) (Candidate, error) {
	c := Candidate{}
	if key == "" {
		return c, nil
	}
	for _, part := range strings.Split(key, ",") {
		name, val, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("candidate key %q: %q is not NAME=value", key, part)
		}
		v, err := strconv.Atoi(val)
		if err != nil {
			return nil, fmt.Errorf("candidate key %q: %s: %w", key, name, err)
		}
		c[name] = v
	}
	return c, nil
}

// Size is the number of points of the cartesian product, before constraints.
func (s *Space) Size() int {
	n := 1
	for _, p := range s.Params {
		n *= len(p.Values)
	}
	return n
}

// Check reports why c is not a valid candidate of s, or nil.
func (s *Space) Check(c Candidate) error {
	return s.check(c, false)
}

// CheckValid is Check with the Narrow constraints lifted: whether c may run
// at all, rather than whether this run searches it.
func (s *Space) CheckValid(c Candidate) error {
	return s.check(c, true)
}

func (s *Space) check(c Candidate, lift bool) error {
	if len(c) != len(s.Params) {
		return fmt.Errorf("candidate %s has %d parameters, the space has %d", c.Key(), len(c), len(s.Params))
	}
	for _, p := range s.Params {
		v, ok := c[p.Name]
		if !ok {
			return fmt.Errorf("candidate %s lacks parameter %s", c.Key(), p.Name)
		}
		found := false
		for _, x := range p.Values {
			if x == v {
				found = true
				break
			}
		}
		if !found {
			return fmt.Errorf("%s=%d is not an allowed value (allowed: %v)", p.Name, v, p.Values)
		}
	}
	for _, con := range s.Constraints {
		if lift && con.Narrow {
			continue
		}
		if err := con.Check(c); err != nil {
			return fmt.Errorf("%s: %w", con.Name, err)
		}
	}
	return nil
}

// Enumerate returns every valid candidate in a deterministic order (the
// cartesian product in parameter order, last parameter fastest). Large
// products are checked in parallel, in chunks whose results are joined in
// order: a GEMM space of a million combinations took about a second on one
// core, a setup cost paid before every entry's first measurement.
// Constraints must therefore be safe for concurrent use (pure functions of
// the candidate, as every constraint here is).
func (s *Space) Enumerate() []Candidate {
	if s.Within != nil {
		var rest []Constraint
		for _, con := range s.Constraints {
			if con.PerShape || con.TuneOnly {
				rest = append(rest, con)
			}
		}
		var out []Candidate
	next:
		for _, c := range s.Within {
			for _, con := range rest {
				if con.Check(c) != nil {
					continue next
				}
			}
			out = append(out, c.Clone())
		}
		return out
	}
	n := 1
	for _, p := range s.Params {
		if len(p.Values) == 0 {
			return nil
		}
		n *= len(p.Values)
	}
	pieces := min(n/enumeratePiece+1, 4*runtime.GOMAXPROCS(0))
	parts := make([][]Candidate, pieces)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(pieces, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= pieces {
					return
				}
				parts[i] = s.enumerateRange(i*n/pieces, (i+1)*n/pieces)
			}
		}()
	}
	wg.Wait()
	var out []Candidate
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// enumeratePiece is the smallest share of a product worth a goroutine.
const enumeratePiece = 4096

// enumerateRange checks the combinations lo..hi-1 of the product (in
// Enumerate's order) and returns the valid ones. The parameter values are
// allowed by construction, so only the constraints are checked.
func (s *Space) enumerateRange(lo, hi int) []Candidate {
	idx := make([]int, len(s.Params))
	for i, r := len(s.Params)-1, lo; i >= 0; i-- {
		idx[i] = r % len(s.Params[i].Values)
		r /= len(s.Params[i].Values)
	}
	var out []Candidate
	c := make(Candidate, len(s.Params))
	for k := lo; k < hi; k++ {
		for i, p := range s.Params {
			c[p.Name] = p.Values[idx[i]]
		}
		ok := true
		for _, con := range s.Constraints {
			if con.Check(c) != nil {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, c.Clone())
		}
		for i := len(idx) - 1; i >= 0; i-- {
			idx[i]++
			if idx[i] < len(s.Params[i].Values) {
				break
			}
			idx[i] = 0
		}
	}
	return out
}
