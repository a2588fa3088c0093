package ktcache

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/kerntune/kerntune/internal/t4"
	"github.com/kerntune/kerntune/params/paramfile"
	"github.com/kerntune/kerntune/search"
)

// Config is one recorded configuration.
type Config struct {
	Candidate search.Candidate
	// Valid is false when the recorded time is an error (compile or
	// runtime failure, invalid configuration).
	Valid bool
	// Failure is the recorded error string of an invalid configuration.
	Failure string
	// Time is the recorded objective: the mean of Times, in seconds.
	Time float64
	// Times are the raw recorded samples, in seconds.
	Times []float64
	// CompileS is the recorded compile time in seconds (0 when absent).
	CompileS float64
}

// Cache is a recorded search space.
type Cache struct {
	Path   string
	Device string
	Kernel string
	// Params are the tuning parameters in tune_params_keys order, with their
	// values in file order. Parameters whose values are not all integers are
	// mapped to value indices (0, 1, ...) so that a configuration stays a
	// search.Candidate.
	Params  []search.Param
	Configs []*Config
	byKey   map[string]*Config
}

// Lookup returns the recorded configuration of c, if present.
func (c *Cache) Lookup(cand search.Candidate) (*Config, bool) {
	cfg, ok := c.byKey[cand.Key()]
	return cfg, ok
}

// Space is the cache's parameter space (no constraints: the configurations
// present in the cache are the space, see Candidates).
func (c *Cache) Space() *search.Space { return &search.Space{Params: c.Params} }

// Candidates returns every recorded configuration, valid or not, in file order.
func (c *Cache) Candidates() []search.Candidate {
	out := make([]search.Candidate, len(c.Configs))
	for i, cfg := range c.Configs {
		out[i] = cfg.Candidate
	}
	return out
}

// FirstValues is the configuration of every parameter's first value (the
// first listed in tune_params; the smallest for T4 results, which list
// none). It need not be in the cache.
func (c *Cache) FirstValues() search.Candidate {
	cand := make(search.Candidate, len(c.Params))
	for _, p := range c.Params {
		cand[p.Name] = p.Values[0]
	}
	return cand
}

// Best returns the valid configuration with the lowest recorded time.
func (c *Cache) Best() (*Config, bool) {
	var best *Config
	for _, cfg := range c.Configs {
		if cfg.Valid && (best == nil || cfg.Time < best.Time) {
			best = cfg
		}
	}
	return best, best != nil
}

// ValidCount is the number of valid configurations.
func (c *Cache) ValidCount() int {
	n := 0
	for _, cfg := range c.Configs {
		if cfg.Valid {
			n++
		}
	}
	return n
}

// MaxSize is the most JSON Load reads from one cache, after
// decompression: 1 GiB (the brute-forced caches of benchmark_hub are
// tens of megabytes). A larger cache, or a device such as /dev/zero, is an
// error rather than a read that fills memory.
const MaxSize = 1 << 30

// Load reads a cache file; a name ending in .gz is decompressed. Data that
// does not start with a JSON object (after white space) is refused at its
// first byte; more than MaxSize bytes of JSON are refused.
func Load(path string) (*Cache, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading Kernel Tuner cache: %w", err)
	}
	defer f.Close()
	var r io.Reader = bufio.NewReader(f)
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("%s: not gzip data: %w", path, err)
		}
		defer gz.Close()
		r = gz
	}
	br := bufio.NewReader(io.LimitReader(r, MaxSize+1))
	if err := startsObject(br); err != nil {
		return nil, fmt.Errorf("%s: not a Kernel Tuner cache (a JSON object, .json or .json.gz): %w", path, err)
	}
	data, err := io.ReadAll(br)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%s: more than %s of JSON, the limit of a Kernel Tuner cache", path, paramfile.SizeString(MaxSize))
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c.Path = path
	return c, nil
}

// startsObject checks, without consuming it, that the first byte after
// white space opens a JSON object.
func startsObject(br *bufio.Reader) error {
	for i := 0; ; i++ {
		b, err := br.Peek(i + 1)
		if err == io.EOF && len(b) <= i {
			return errors.New("empty")
		}
		if err != nil && len(b) <= i {
			return err
		}
		switch c := b[i]; c {
		case ' ', '\t', '\n', '\r':
			if i+1 >= br.Size() {
				return errors.New("only white space in its first kilobytes")
			}
			continue
		case '{':
			return nil
		default:
			return fmt.Errorf("it starts with %q", c)
		}
	}
}

// classic is the classic cache format.
type classic struct {
	DeviceName     string                       `json:"device_name"`
	KernelName     string                       `json:"kernel_name"`
	TuneParamsKeys []string                     `json:"tune_params_keys"`
	TuneParams     map[string][]json.RawMessage `json:"tune_params"`
	Cache          map[string]map[string]json.RawMessage
}

// Parse decodes cache data in either format. The non-standard tokens NaN,
// Infinity and -Infinity, which Python's json module writes by default, are
// read as null: a time that is not a finite number is a failure, and such
// samples are dropped.
func Parse(data []byte) (*Cache, error) {
	data = nonFiniteToNull(data)
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	switch {
	case probe["cache"] != nil:
		return parseClassic(data)
	case probe["results"] != nil:
		return parseT4(data)
	}
	return nil, fmt.Errorf("neither a Kernel Tuner cache (key \"cache\") nor T4 results (key \"results\")")
}

// values maps one parameter's raw values to integers: the integers
// themselves when all are integral, else their indices. It returns the
// mapping from the raw value's canonical text to the integer.
func values(name string, raw []json.RawMessage) ([]int, map[string]int, error) {
	if len(raw) == 0 {
		return nil, nil, fmt.Errorf("tune_params.%s has no values", name)
	}
	ints := make([]int, len(raw))
	byText := map[string]int{}
	integral := true
	for i, r := range raw {
		var f float64
		if err := json.Unmarshal(r, &f); err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			integral = false
			break
		}
		ints[i] = int(f)
	}
	for i, r := range raw {
		if !integral {
			ints[i] = i
		}
		byText[canon(r)] = ints[i]
	}
	return ints, byText, nil
}

// canon is a raw JSON value's text as Kernel Tuner writes it in cache keys:
// numbers in their shortest form, strings without quotes.
func canon(r json.RawMessage) string {
	var s string
	if json.Unmarshal(r, &s) == nil {
		return s
	}
	var f float64
	if json.Unmarshal(r, &f) == nil {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return string(bytes.TrimSpace(r))
}

func parseClassic(data []byte) (*Cache, error) {
	var cf classic
	if err := json.Unmarshal(data, &cf); err != nil {
		return nil, fmt.Errorf("Kernel Tuner cache: %w", err)
	}
	keys := cf.TuneParamsKeys
	if len(keys) == 0 {
		for k := range cf.TuneParams {
			keys = append(keys, k)
		}
		sort.Strings(keys)
	}
	c := &Cache{Device: cf.DeviceName, Kernel: cf.KernelName, byKey: map[string]*Config{}}
	maps := make([]map[string]int, len(keys))
	for i, k := range keys {
		raw, ok := cf.TuneParams[k]
		if !ok {
			return nil, fmt.Errorf("tune_params_keys names %q, which tune_params lacks", k)
		}
		vs, m, err := values(k, raw)
		if err != nil {
			return nil, err
		}
		c.Params = append(c.Params, search.Param{Name: k, Values: vs})
		maps[i] = m
	}
	ids := make([]string, 0, len(cf.Cache))
	for id := range cf.Cache {
		ids = append(ids, id)
	}
	sort.Strings(ids) // deterministic order
	for _, id := range ids {
		rec := cf.Cache[id]
		cand := search.Candidate{}
		for i, k := range keys {
			raw, ok := rec[k]
			if !ok {
				return nil, fmt.Errorf("cache[%q]: no value for parameter %s", id, k)
			}
			v, ok := maps[i][canon(raw)]
			if !ok {
				return nil, fmt.Errorf("cache[%q]: %s=%s is not in tune_params.%s", id, k, raw, k)
			}
			cand[k] = v
		}
		cfg := &Config{Candidate: cand}
		if raw, ok := rec["compile_time"]; ok {
			var ms float64
			if json.Unmarshal(raw, &ms) == nil && ms > 0 {
				cfg.CompileS = ms / 1e3
			}
		}
		var times []float64
		if raw, ok := rec["times"]; ok {
			if err := json.Unmarshal(raw, &times); err != nil {
				return nil, fmt.Errorf("cache[%q].times: %w", id, err)
			}
		}
		if err := cfg.setTime(rec["time"], times); err != nil {
			return nil, fmt.Errorf("cache[%q]: %w", id, err)
		}
		if err := c.add(cfg); err != nil {
			return nil, err
		}
	}
	return c.check()
}

func parseT4(data []byte) (*Cache, error) {
	tf, err := t4.Parse(data)
	if err != nil {
		return nil, err
	}
	if err := oneEntry(tf); err != nil {
		return nil, err
	}
	c := &Cache{byKey: map[string]*Config{}}
	// The T4 format has no parameter list: collect the values seen, sorted.
	seen := map[string]map[string]json.RawMessage{}
	var keys []string
	for i, r := range tf.Results {
		if i == 0 {
			for k := range r.Configuration {
				keys = append(keys, k)
			}
			sort.Strings(keys)
		}
		if len(r.Configuration) != len(keys) {
			return nil, fmt.Errorf("results[%d].configuration has %d parameters, results[0] has %d", i, len(r.Configuration), len(keys))
		}
		for k, v := range r.Configuration {
			if seen[k] == nil {
				seen[k] = map[string]json.RawMessage{}
			}
			seen[k][canon(v)] = v
		}
	}
	maps := make([]map[string]int, len(keys))
	for i, k := range keys {
		raws := make([]json.RawMessage, 0, len(seen[k]))
		for _, v := range seen[k] {
			raws = append(raws, v)
		}
		sort.Slice(raws, func(a, b int) bool { return lessRaw(raws[a], raws[b]) })
		vs, m, err := values(k, raws)
		if err != nil {
			return nil, err
		}
		c.Params = append(c.Params, search.Param{Name: k, Values: vs})
		maps[i] = m
	}
	for i, r := range tf.Results {
		cand := search.Candidate{}
		for j, k := range keys {
			raw, ok := r.Configuration[k]
			if !ok {
				return nil, fmt.Errorf("results[%d].configuration lacks %s", i, k)
			}
			cand[k] = maps[j][canon(raw)]
		}
		cfg := &Config{Candidate: cand}
		if r.Times.Compilation != nil && *r.Times.Compilation > 0 {
			cfg.CompileS = *r.Times.Compilation / 1e3
		}
		if err := cfg.setTime(r.Time(), r.Times.Runtimes); err != nil {
			return nil, fmt.Errorf("results[%d]: %w", i, err)
		}
		if err := c.add(cfg); err != nil {
			return nil, err
		}
	}
	return c.check()
}

// oneEntry refuses T4 results that kerntune export wrote for several
// entries (devices, kernels or shape classes) at once: a cache is one
// tuning problem, and their configurations would clash or mix spaces.
func oneEntry(tf *t4.File) error {
	var entries []t4.Entry
	for _, r := range tf.Results {
		if r.Entry == nil {
			continue
		}
		e := t4.Entry{Device: r.Entry.Device, Kernel: r.Entry.Kernel, Key: r.Entry.Key}
		if !slices.Contains(entries, e) {
			entries = append(entries, e)
		}
	}
	if len(entries) < 2 {
		return nil
	}
	e := entries[0]
	return fmt.Errorf("the T4 results hold %d kerntune entries (kerntune_entry: %s %s %s, %s %s %s, …) and a cache is one tuning problem: export one entry with kerntune export --t4 --device %s --kernel %s --key %s",
		len(entries), e.Device, e.Kernel, e.Key, entries[1].Device, entries[1].Kernel, entries[1].Key, e.Device, e.Kernel, e.Key)
}

// nonFiniteToNull replaces the bare tokens NaN, Infinity and -Infinity
// outside strings by null. Data without them is returned as is.
func nonFiniteToNull(data []byte) []byte {
	if !bytes.Contains(data, []byte("NaN")) && !bytes.Contains(data, []byte("Infinity")) {
		return data
	}
	out := make([]byte, 0, len(data))
	inStr, esc := false, false
	for i := 0; i < len(data); i++ {
		b := data[i]
		if inStr {
			switch {
			case esc:
				esc = false
			case b == '\\':
				esc = true
			case b == '"':
				inStr = false
			}
			out = append(out, b)
			continue
		}
		if b == '"' {
			inStr = true
			out = append(out, b)
			continue
		}
		if n := nonFiniteAt(data[i:]); n > 0 {
			out = append(out, "null"...)
			i += n - 1
			continue
		}
		out = append(out, b)
	}
	return out
}

// nonFiniteAt is the length of the non-finite token data starts with (0: none).
func nonFiniteAt(data []byte) int {
	for _, tok := range []string{"NaN", "Infinity", "-Infinity"} {
		if bytes.HasPrefix(data, []byte(tok)) {
			return len(tok)
		}
	}
	return 0
}

func lessRaw(a, b json.RawMessage) bool {
	var fa, fb float64
	if json.Unmarshal(a, &fa) == nil && json.Unmarshal(b, &fb) == nil {
		return fa < fb
	}
	return canon(a) < canon(b)
}

// setTime reads a recorded time (milliseconds, or an error string) and the
// raw samples (milliseconds). A numeric time with no samples is one sample.
func (cfg *Config) setTime(raw json.RawMessage, timesMS []float64) error {
	if raw == nil {
		return fmt.Errorf("no time recorded")
	}
	if string(bytes.TrimSpace(raw)) == "null" {
		cfg.Failure = "time is not a number (null, NaN or Infinity)"
		return nil
	}
	var ms float64
	if err := json.Unmarshal(raw, &ms); err != nil {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return fmt.Errorf("time %s is neither a number nor an error string", raw)
		}
		cfg.Failure = s
		return nil
	}
	if !(ms > 0) || math.IsInf(ms, 0) {
		cfg.Failure = fmt.Sprintf("non-positive time %g", ms)
		return nil
	}
	cfg.Valid, cfg.Time = true, ms/1e3
	for _, t := range timesMS {
		if t > 0 && !math.IsInf(t, 0) {
			cfg.Times = append(cfg.Times, t/1e3)
		}
	}
	if len(cfg.Times) == 0 {
		cfg.Times = []float64{cfg.Time}
	}
	return nil
}

func (c *Cache) add(cfg *Config) error {
	k := cfg.Candidate.Key()
	if _, dup := c.byKey[k]; dup {
		return fmt.Errorf("configuration %s appears twice", k)
	}
	c.byKey[k] = cfg
	c.Configs = append(c.Configs, cfg)
	return nil
}

func (c *Cache) check() (*Cache, error) {
	if len(c.Configs) == 0 {
		return nil, fmt.Errorf("the cache holds no configuration")
	}
	if c.ValidCount() == 0 {
		return nil, fmt.Errorf("the cache holds no valid configuration (all %d failed)", len(c.Configs))
	}
	return c, nil
}
