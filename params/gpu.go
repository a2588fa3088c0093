package params

import (
	"bufio"
	"errors"
	"strconv"
	"strings"
	"sync"
)

// LocalGPU describes this machine's GPU where the system reports its core
// count without a driver binding: on macOS, the Apple GPU's "model" and
// "gpu-core-count" from the I/O Registry (class AGXAccelerator, read with
// /usr/sbin/ioreg), as Backend "metal", Name the model ("Apple M3 Max", the
// name MTLDevice.name and MLX report) and ComputeUnits the core count. Key
// is empty. Elsewhere, and when the registry holds no such entry, it
// returns an error. The first call reads the system; later calls return
// the same result.
//
// It lives here, not behind IOKit bindings, because this package uses the
// standard library only: a process that imports it must not link frameworks
// or change how the runtime starts threads.
func LocalGPU() (DeviceID, error) {
	localGPUOnce.Do(func() { localGPU, localGPUErr = readLocalGPU() })
	return localGPU, localGPUErr
}

var (
	localGPUOnce sync.Once
	localGPU     DeviceID
	localGPUErr  error
)

// errNoGPULookup: the system offers no GPU core count to read.
var errNoGPULookup = errors.New("no GPU core count to read on this system")

// parseIoreg reads the first I/O Registry entry that has a "gpu-core-count"
// in ioreg's text output (`ioreg -r -d 1 -c AGXAccelerator`), with its
// "model". Entries are separated by lines that start with "+-o".
func parseIoreg(out string) (model string, cores int, err error) {
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var m string
	c := 0
	flush := func() bool {
		if c > 0 {
			model, cores = m, c
			return true
		}
		m, c = "", 0
		return false
	}
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "+-o") {
			if flush() {
				return model, cores, nil
			}
			continue
		}
		k, v, ok := strings.Cut(line, " = ")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case `"gpu-core-count"`:
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 {
				c = n
			}
		case `"model"`:
			if s, err := strconv.Unquote(strings.TrimSpace(v)); err == nil {
				m = s
			}
		}
	}
	if flush() {
		return model, cores, nil
	}
	return "", 0, errors.New(`no I/O Registry entry with "gpu-core-count"`)
}
