package params

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
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
// on macOS, else GOARCH) passed through NormalizeCPUModel, ComputeUnits is
// runtime.NumCPU() (the CPUs this process may run on; hw.ncpu on macOS),
// Key is CPUDeviceKey(Name, ComputeUnits), Backend is "cpu" and Family is
// GOARCH. It reads the system each time it is called.
func LocalDevice() DeviceID {
	model := NormalizeCPUModel(cpuModelRaw())
	cores := runtime.NumCPU()
	return DeviceID{Key: CPUDeviceKey(model, cores), Backend: "cpu", Name: model, Family: runtime.GOARCH, ComputeUnits: cores}
}

// CPUDeviceKey is a CPU's key in the params file: cpu:<model>:<cores>.
func CPUDeviceKey(model string, cores int) string {
	return fmt.Sprintf("cpu:%s:%d", model, cores)
}

// NormalizeCPUModel makes a CPU model name fit for a device key: runs of
// white space become one space, "/" (the separator of Source strings)
// becomes "-" and double quotes are dropped.
func NormalizeCPUModel(s string) string {
	s = strings.NewReplacer("/", "-", "\"", "").Replace(s)
	return strings.Join(strings.Fields(s), " ")
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
// "/" turned into "-" and double quotes dropped (as NormalizeCPUModel does
// for the names the CPU backend writes). Two names match when their folded
// forms are equal and not empty: "apple  m3 max" matches "Apple M3 Max", but
// "NVIDIA H100" does not match "NVIDIA H100 80GB HBM3".
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

// matchName finds the devices of f named like name (see FoldDeviceName),
// of the given backend unless it is empty, and picks one: the nearest
// compute units to cu when cu > 0 (devices that record none come last),
// ties and cu = 0 broken by key. It returns the key ("" for none) and the
// Matched text: "name", "name, nearest compute units (<has> for <cu>)",
// "name, compute units not recorded (wanted <cu>)" or
// "name, first of <n> by key (no compute units given)".
func matchName(f *File, name string, cu int, backend string) (key, matched string) {
	want := FoldDeviceName(name)
	if f == nil || want == "" {
		return "", ""
	}
	type cand struct {
		key  string
		cu   int
		dist int64
	}
	var cs []cand
	for k, d := range f.Devices {
		if d == nil || FoldDeviceName(d.Name) != want || backend != "" && d.Backend != backend {
			continue
		}
		c := cand{key: k, cu: d.ComputeUnits}
		switch {
		case cu <= 0:
		case d.ComputeUnits <= 0:
			c.dist = 1 << 40
		default:
			c.dist = int64(d.ComputeUnits) - int64(cu)
			if c.dist < 0 {
				c.dist = -c.dist
			}
		}
		cs = append(cs, c)
	}
	if len(cs) == 0 {
		return "", ""
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].dist != cs[j].dist {
			return cs[i].dist < cs[j].dist
		}
		return cs[i].key < cs[j].key
	})
	best := cs[0]
	switch {
	case cu > 0 && best.cu == cu, cu <= 0 && len(cs) == 1:
		return best.key, MatchedName
	case cu > 0 && best.cu <= 0:
		return best.key, fmt.Sprintf("%s, compute units not recorded (wanted %d)", MatchedName, cu)
	case cu > 0:
		return best.key, fmt.Sprintf("%s, nearest compute units (%d for %d)", MatchedName, best.cu, cu)
	}
	return best.key, fmt.Sprintf("%s, first of %d by key (no compute units given)", MatchedName, len(cs))
}

// describeDevices lists the file's devices for warnings, sorted by key.
func describeDevices(f *File) string {
	var parts []string
	for _, k := range sortedKeys(f.Devices) {
		if d := f.Devices[k]; d != nil {
			parts = append(parts, describeDevice(k, d))
		}
	}
	return strings.Join(parts, "; ")
}

// describeDevice names one device of the file for warnings.
func describeDevice(k string, d *Device) string {
	return describeLocal(DeviceID{Key: k, Backend: d.Backend, Name: d.Name, ComputeUnits: d.ComputeUnits, Family: d.Family})
}

// describeLocal names the local device (Options.Local) for warnings.
func describeLocal(d DeviceID) string {
	return fmt.Sprintf("%s (backend %s, name %q, compute units %d, family %s)", d.Key, d.Backend, d.Name, d.ComputeUnits, d.Family)
}
