package tuner

import "github.com/kerntune/kerntune/tuner/device"

// DefaultBatch is how many candidates the search proposes at once on a
// backend that compiles candidates ahead (BatchFor). The first of a batch
// waits for its compile; the others compile on the backend's pool, in
// parallel, while the device verifies and times the first, and the
// strategy's guesses at the next batch (search.Lookahead) compile behind
// them. Eight keeps a pool of 8–16 compile goroutines fed with the batch
// and its lookahead, while a search of 40 or more candidates still adapts
// to what it measures after every few.
const DefaultBatch = 8

// BatchFor is the batch size of a search on b: DefaultBatch when b
// compiles candidates ahead (a Prefetcher whose candidates are GPU code,
// so that builds are compiles) on a device of its own, else 1: on the CPU
// a build costs nothing, and on a device that runs on the host's cores
// (DeviceInfo.OnHostCPU) compiles ahead would slow the timed runs down, so
// a batch would only make the search less adaptive.
func BatchFor(b device.Backend) int {
	if !compilesAhead(b) {
		return 1
	}
	if tr, err := device.TraitsOf(b.Info().Backend); err != nil || tr.Space != device.SpaceGPU {
		return 1
	}
	return DefaultBatch
}

// compilesAhead reports whether the tuner hands b the candidates it will
// build (Prefetcher): b has a compile pool and its device is not the host's
// cores.
func compilesAhead(b device.Backend) bool {
	_, ok := b.(device.Prefetcher)
	return ok && !b.Info().OnHostCPU
}
