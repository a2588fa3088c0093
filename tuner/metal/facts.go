package metal

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/kerntune/kerntune/kernels/gpu"
)

// Limits every Metal candidate is held to, whatever the device reports:
// Apple GPUs allow 1024 threads and 32 KB of threadgroup memory per
// threadgroup (Apple7–Apple9), and Intel Macs' GPUs no more.
const (
	maxThreadsPerGroup = 1024
	maxSharedPerGroup  = 32 << 10
)

// deviceKey is the device's key in hardware_params.json:
// metal:<name>:<cores>c. Binned chips share a name but not a core count
// (an M3 Max has 30 or 40 GPU cores), and tuned parameters follow the core
// count, so it is part of the key; when IOKit does not report it the key is
// metal:<name>.
func deviceKey(name string, cores int) string {
	n := strings.NewReplacer("/", "-", ":", "-").Replace(strings.TrimSpace(name))
	if n == "" {
		n = "unknown"
	}
	if cores <= 0 {
		return "metal:" + n
	}
	return fmt.Sprintf("metal:%s:%dc", n, cores)
}

// familyKey is the fallback key shared by similar devices: the highest
// MTLGPUFamilyApple<N> the device supports ("apple9"), else "mac2" for a
// Mac2-family GPU (Intel Macs' AMD and Intel GPUs), else "metal".
func familyKey(apple int, mac2 bool) string {
	switch {
	case apple > 0:
		return fmt.Sprintf("apple%d", apple)
	case mac2:
		return "mac2"
	}
	return "metal"
}

var chipRE = regexp.MustCompile(`(?i)\bapple m(\d+)(?:\s+(pro|max|ultra))?\b`)

// slcBytes estimates the system-level cache (SLC) of an Apple chip from its
// name, for the rotation of input copies. It is an estimate: Apple does not
// publish the SLC size and Metal cannot query it. M1 and M2 are from public
// die analyses (8, 24, 48, 96 MB for the base, Pro, Max and Ultra chips);
// later generations are not well documented and get generous values. An
// overestimate only costs memory (more rotated copies, capped by the tuner);
// an underestimate would let "streamed" inputs hit in the cache. Unknown
// chips (and the GPUs of Intel Macs) get 48 MB.
func slcBytes(name string) int64 {
	const mb = 1 << 20
	m := chipRE.FindStringSubmatch(name)
	if m == nil {
		return 48 * mb
	}
	gen, _ := strconv.Atoi(m[1])
	tier := strings.ToLower(m[2])
	known := map[string]int64{"": 8, "pro": 24, "max": 48, "ultra": 96}
	generous := map[string]int64{"": 16, "pro": 32, "max": 64, "ultra": 128}
	if gen <= 2 {
		return known[tier] * mb
	}
	return generous[tier] * mb
}

// peakFlopsCeiling is a generous physical ceiling for measurement checks:
// 1024 flops per GPU core per clock (four times an Apple GPU core's FP32 FMA
// rate) at 3.2 GHz, or four times the measured FMA rate, whichever is
// higher; 10 PFLOP/s when neither is known.
func peakFlopsCeiling(cores int, measuredGFLOPS float64) float64 {
	c := 0.0
	if cores > 0 {
		c = float64(cores) * 1024 * 1.6e9 * 2
	}
	c = math.Max(c, 4*measuredGFLOPS*1e9)
	if c <= 0 {
		return 1e16
	}
	return c
}

// peakBandwidthCeiling: 1.2 TB/s (above any Apple chip's DRAM bandwidth) or
// four times the measured copy bandwidth, whichever is higher, so that data
// resident in the SLC is not rejected either.
func peakBandwidthCeiling(measuredGBPS float64) float64 {
	return math.Max(1.2e12, 4*measuredGBPS*1e9)
}

// deviceLimits are the device's limits on candidates: threads per
// threadgroup and static threadgroup memory, each the lower of what the
// device reports (0: nothing) and what every Metal candidate is held to,
// and simdgroup_matrix where the GPU family has it. The SIMD width is left
// unknown: Metal reports it per pipeline, which Build checks (checkPipeline).
func deviceLimits(maxThreads, maxShared int, fam gpuFamily) *gpu.Limits {
	l := &gpu.Limits{API: gpu.Metal, MaxThreads: maxThreadsPerGroup, MaxShared: maxSharedPerGroup}
	if maxThreads > 0 {
		l.MaxThreads = min(l.MaxThreads, maxThreads)
	}
	if maxShared > 0 {
		l.MaxShared = min(l.MaxShared, maxShared)
	}
	if fam.simdgroupMatrix() {
		l.Features = []gpu.Feature{gpu.SIMDMatrix}
	}
	return l
}

// roundUp rounds n up to a multiple of m.
func roundUp(n, m int) int { return (n + m - 1) / m * m }

// scalarWords converts a body's scalar arguments (int32 and float32, in
// order) to the 4-byte words bound with setBytes:length:atIndex: as
// `constant int&` / `constant float&`.
func scalarWords(scalars []any) ([]uint32, error) {
	out := make([]uint32, len(scalars))
	for i, s := range scalars {
		switch v := s.(type) {
		case int32:
			out[i] = uint32(v)
		case float32:
			out[i] = math.Float32bits(v)
		default:
			return nil, fmt.Errorf("scalar argument %d has type %T; the Metal backend binds only int32 and float32", i, s)
		}
	}
	return out, nil
}

// compileError makes an error of a Metal compiler log (the NSError's
// localizedDescription): its first "error:" line first, since verify groups
// failures by an error's first line, then the whole log.
func compileError(log string) error {
	log = strings.TrimSpace(log)
	first := ""
	for _, line := range strings.Split(log, "\n") {
		line = strings.TrimSpace(line)
		if strings.Contains(line, "error:") {
			first = line
			break
		}
		if first == "" && line != "" {
			first = line
		}
	}
	if first == log {
		return fmt.Errorf("metal compiler: %s", first)
	}
	return fmt.Errorf("metal compiler: %s\n%s", first, log)
}
