package paramfile

import (
	"fmt"
	"strings"
)

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
