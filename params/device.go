package params

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/kerntune/kerntune/params/paramfile"
)

// DeviceID identifies a device as the params file records it: the fields
// of a device object and its key.
type DeviceID struct {
	Key          string `json:"key"`
	Backend      string `json:"backend"`
	Name         string `json:"name"`
	Family       string `json:"family"`
	ComputeUnits int    `json:"compute_units"`
}

// LocalDevice describes this machine's CPU exactly as kerntune's CPU
// backend records it (the backend calls LocalDevice, so the two cannot
// diverge): Name is the model (the first non-empty "model name", "Model" or
// "Hardware" line of /proc/cpuinfo on Linux, sysctl machdep.cpu.brand_string
// on macOS, else GOARCH) passed through paramfile.NormalizeCPUModel,
// ComputeUnits is runtime.NumCPU() (the CPUs this process may run on;
// hw.ncpu on macOS), Key is paramfile.CPUDeviceKey(Name, ComputeUnits),
// Backend is "cpu" and Family is GOARCH. It reads the system each time it
// is called.
func LocalDevice() DeviceID {
	model := paramfile.NormalizeCPUModel(cpuModelRaw())
	cores := runtime.NumCPU()
	return DeviceID{Key: paramfile.CPUDeviceKey(model, cores), Backend: "cpu", Name: model, Family: runtime.GOARCH, ComputeUnits: cores}
}

// cpuModelRaw reads the CPU model as the system reports it.
func cpuModelRaw() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		if m := sysctlCPUModel(); m != "" {
			return m
		}
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "model name", "Model", "Hardware":
			if v = strings.TrimSpace(v); v != "" {
				return v
			}
		}
	}
	return runtime.GOARCH
}

// FoldDeviceName is the form in which device names are compared: ASCII
// letters lower-cased, runs of ASCII white space made one space and trimmed,
// "/" turned into "-" and double quotes dropped (as
// paramfile.NormalizeCPUModel does for the names the CPU backend writes).
// Two names match when their folded forms are equal and not empty:
// "apple  m3 max" matches "Apple M3 Max", but "NVIDIA H100" does not match
// "NVIDIA H100 80GB HBM3".
func FoldDeviceName(s string) string {
	s = strings.NewReplacer("/", "-", "\"", "").Replace(s)
	fields := strings.FieldsFunc(s, func(r rune) bool {
		switch r {
		case ' ', '\t', '\n', '\r', '\v', '\f':
			return true
		}
		return false
	})
	b := []byte(strings.Join(fields, " "))
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

// Matched values of DeviceChoice and Resolved: how the device whose entries
// apply was found. Name matches may add a note (see matchName), and a
// family fallback reads "family <family>".
const (
	MatchedKey  = "key"
	MatchedOnly = "only device in file"
	MatchedName = "name"
	MatchedNone = "none"
)

// nameMatch is what matchName found: the key chosen ("" for none), the
// Matched text, and, when the choice was not exact, the candidates and
// what was compared, for the warning that says so (see warning).
type nameMatch struct {
	key, matched string
	exact        bool       // one device of the name had the compute units, or only one had the name and none were given
	cands        []nameCand // the devices of the name, by key
	cu           int        // compute units compared, 0 when unknown
	cuHow        string     // where cu came from
	why          string     // how key was picked among cands
	gpuErr       error      // why this machine's GPU did not give cu, when it was asked
}

type nameCand struct {
	key string
	cu  int
}

// matchName finds the devices of f named like name (see FoldDeviceName),
// of the given backend unless it is empty, and picks one.
//
// When cu is 0 (unknown) and gpu is not nil, gpu is asked for this
// machine's GPU: when its name is name and it reports compute units, those
// stand for cu (cuHow "this machine's GPU"), and, backend being empty,
// only the devices of its backend are considered if the file has any.
//
// With cu known, the device with exactly cu compute units is chosen
// ("name", exact); when several have it, the first by key ("name, first of
// <n> by key with <cu> compute units"); when none has it, the nearest
// (devices that record none last; ties by key): "name, nearest compute
// units (<has> for <cu>)" or "name, compute units not recorded (wanted
// <cu>)". With cu unknown, the only device of the name ("name", exact), or
// the first of several by key ("name, first of <n> by key (no compute
// units given)"). Every choice that is not exact is warned of (warning).
func matchName(f *paramfile.File, name string, cu int, cuHow, backend string, gpu func() (DeviceID, error)) nameMatch {
	want := FoldDeviceName(name)
	if f == nil || want == "" {
		return nameMatch{}
	}
	var cs []nameCand
	for _, k := range sortedKeys(f.Devices) {
		d := f.Devices[k]
		if d == nil || FoldDeviceName(d.Name) != want || backend != "" && d.Backend != backend {
			continue
		}
		cs = append(cs, nameCand{key: k, cu: d.ComputeUnits})
	}
	if len(cs) == 0 {
		return nameMatch{}
	}
	m := nameMatch{cu: cu, cuHow: cuHow}
	if cu <= 0 && gpu != nil {
		g, err := gpu()
		switch {
		case err != nil:
			m.gpuErr = err
		case g.ComputeUnits > 0 && FoldDeviceName(g.Name) == want:
			m.cu, m.cuHow = g.ComputeUnits, "this machine's GPU"
			if backend == "" && g.Backend != "" {
				var same []nameCand
				for _, c := range cs {
					if f.Devices[c.key].Backend == g.Backend {
						same = append(same, c)
					}
				}
				if len(same) > 0 {
					cs = same
				}
			}
		}
	}
	m.cands = cs
	cu = m.cu
	if cu <= 0 {
		m.key = cs[0].key
		if len(cs) == 1 {
			m.matched, m.exact = MatchedName, true
			return m
		}
		m.matched = fmt.Sprintf("%s, first of %d by key (no compute units given)", MatchedName, len(cs))
		m.why = "the first by key"
		return m
	}
	var same []string
	for _, c := range cs {
		if c.cu == cu {
			same = append(same, c.key)
		}
	}
	switch {
	case len(same) == 1:
		m.key, m.matched, m.exact = same[0], MatchedName, true
		return m
	case len(same) > 1:
		m.key = same[0]
		m.matched = fmt.Sprintf("%s, first of %d by key with %d compute units", MatchedName, len(same), cu)
		m.why = fmt.Sprintf("the first by key of those with %d", cu)
		return m
	}
	dist := func(c nameCand) int64 {
		if c.cu <= 0 {
			return 1 << 40
		}
		d := int64(c.cu) - int64(cu)
		return max(d, -d)
	}
	best := cs[0]
	for _, c := range cs[1:] {
		if dist(c) < dist(best) {
			best = c // cs is sorted by key, so ties keep the first key
		}
	}
	m.key = best.key
	if best.cu <= 0 {
		m.matched = fmt.Sprintf("%s, compute units not recorded (wanted %d)", MatchedName, cu)
		m.why = "which records no compute units"
	} else {
		m.matched = fmt.Sprintf("%s, nearest compute units (%d for %d)", MatchedName, best.cu, cu)
		m.why = "the nearest in compute units"
	}
	return m
}

// warning says, for a choice that was not exact, what was asked, every
// device of that name in the file with its compute units, which one was
// chosen and why, and how to choose: subject names what was asked
// (`device name "Apple M3 Max" (Options.DeviceName)`), hint how to give
// the compute units (empty when there is no such option).
func (m nameMatch) warning(subject, file, prefix, hint string) string {
	if m.exact || m.key == "" {
		return ""
	}
	var b strings.Builder
	b.WriteString(subject)
	if m.cu > 0 {
		fmt.Fprintf(&b, " with %d compute units (%s)", m.cu, m.cuHow)
	} else {
		b.WriteString(" with compute units unknown")
		if m.gpuErr != nil && !errors.Is(m.gpuErr, errNoGPULookup) {
			fmt.Fprintf(&b, " (%v)", m.gpuErr)
		}
	}
	if len(m.cands) > 1 {
		fmt.Fprintf(&b, " matches several entries of %s: ", file)
	} else {
		fmt.Fprintf(&b, " matches one entry of %s: ", file)
	}
	for i, c := range m.cands {
		if i > 0 {
			b.WriteString(", ")
		}
		if c.cu > 0 {
			fmt.Fprintf(&b, "%s (%d compute units)", c.key, c.cu)
		} else {
			fmt.Fprintf(&b, "%s (compute units not recorded)", c.key)
		}
	}
	fmt.Fprintf(&b, "; chose %s, %s; to choose, set %s_DEVICE to a key", m.key, m.why, prefix)
	if m.cu <= 0 && hint != "" {
		b.WriteString(" or pass " + hint)
	}
	return b.String()
}

// describeDevices lists the file's devices for warnings, sorted by key.
func describeDevices(f *paramfile.File) string {
	var parts []string
	for _, k := range sortedKeys(f.Devices) {
		if d := f.Devices[k]; d != nil {
			parts = append(parts, describeDevice(k, d))
		}
	}
	return strings.Join(parts, "; ")
}

// describeDevice names one device of the file for warnings.
func describeDevice(k string, d *paramfile.Device) string {
	return describeLocal(DeviceID{Key: k, Backend: d.Backend, Name: d.Name, ComputeUnits: d.ComputeUnits, Family: d.Family})
}

// describeLocal names the local device (Options.Local) for warnings.
func describeLocal(d DeviceID) string {
	return fmt.Sprintf("%s (backend %s, name %q, compute units %d, family %s)", d.Key, d.Backend, d.Name, d.ComputeUnits, d.Family)
}
