package tuner

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
// so that builds are compiles), else 1: on the CPU a build costs nothing
// and a batch would only make the search less adaptive.
func BatchFor(b Backend) int {
	if _, ok := b.(Prefetcher); !ok {
		return 1
	}
	if tr, err := TraitsOf(b.Info().Backend); err != nil || tr.Space != SpaceGPU {
		return 1
	}
	return DefaultBatch
}
