package tuner

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/kerntune/kerntune/internal/compilecache"
	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params/paramfile"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/device"
)

// slowBackend is fakeBackend with the wall time of a device: a build takes
// build, an output run output, and a timed run run per sample.
type slowBackend struct {
	fakeBackend
	build, output, run time.Duration
	outputs            int
}

type slowProg struct {
	*fakeProg
	b *slowBackend
}

func (b *slowBackend) Build(k *kernels.Kernel, dt kernels.DType, c search.Candidate) (device.Program, error) {
	time.Sleep(b.build)
	return b.fakeBackend.wrap(k, dt, c, func(p *fakeProg) device.Program { return &slowProg{fakeProg: p, b: b} })
}

func (p *slowProg) Run(ti device.Instance, n int) ([]float64, error) {
	time.Sleep(time.Duration(n) * p.b.run)
	return p.fakeProg.Run(ti, n)
}

func (p *slowProg) Output(ti device.Instance) ([]float32, error) {
	time.Sleep(p.b.output)
	p.b.outputs++
	return p.fakeProg.Output(ti)
}

// The entry's time adds up to its wall time, charges builds to compile,
// output runs to verify and timed runs to measure, counts output and timed
// runs as the device's time, and reaches the entry, the result, the trace
// and the journal.
func TestRunAccountsForItsTime(t *testing.T) {
	b := &slowBackend{fakeBackend: fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), threadsCap: 4},
		build: 8 * time.Millisecond, output: 2 * time.Millisecond, run: time.Millisecond}
	j := &memJournal{}
	cfg := Config{Strategy: "random", Seed: 1, Samples: 3, FinalSamples: 5, MaxEvals: 6, Warmup: time.Microsecond, Journal: j}
	res, err := New(b, cfg).Run(context.Background(), gemvTask(t), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	tt := res.Time
	if tt == nil || res.Entry.Time != tt {
		t.Fatalf("time %+v, entry's %+v", tt, res.Entry.Time)
	}
	const eps = 0.0051 // fields are rounded to ms
	parts := tt.SetupS + tt.CompileS + tt.VerifyS + tt.MeasureS + tt.SearchS + tt.JournalS + tt.OtherS
	if math.Abs(parts-tt.WallS) > eps {
		t.Errorf("parts add up to %.3fs, wall %.3fs: %+v", parts, tt.WallS, tt)
	}
	if want := float64(b.builds) * b.build.Seconds(); tt.CompileS < want-eps {
		t.Errorf("compile %.3fs for %d builds of %v", tt.CompileS, b.builds, b.build)
	}
	if want := float64(b.outputs) * b.output.Seconds(); tt.VerifyS < want-eps || tt.DeviceS < tt.MeasureS+want-eps {
		t.Errorf("verify %.3fs, device %.3fs, measure %.3fs for %d output runs of %v", tt.VerifyS, tt.DeviceS, tt.MeasureS, b.outputs, b.output)
	}
	if tt.DeviceS > tt.MeasureS+tt.VerifyS+eps {
		t.Errorf("device %.3fs beyond measure %.3fs + verify %.3fs", tt.DeviceS, tt.MeasureS, tt.VerifyS)
	}
	if math.Abs(tt.IdleS-(tt.WallS-tt.DeviceS)) > eps || math.Abs(tt.BusyPct-100*tt.DeviceS/tt.WallS) > 0.5 {
		t.Errorf("idle %.3fs, busy %.1f%% for device %.3fs of %.3fs", tt.IdleS, tt.BusyPct, tt.DeviceS, tt.WallS)
	}
	var perCand float64
	for _, m := range res.Trace {
		if m.Err == "" && m.CompileS < b.build.Seconds() {
			t.Errorf("%s: compile %.4fs, below one build", m.Key, m.CompileS)
		}
		perCand += m.CompileS
	}
	if perCand > tt.CompileS+eps {
		t.Errorf("candidates' compile %.3fs beyond the entry's %.3fs", perCand, tt.CompileS)
	}
	var timeRec *paramfile.TuneTime
	measured := 0
	for _, rec := range j.recs {
		switch rec.Kind {
		case RecordTime:
			timeRec = rec.Time
		case RecordMeasure:
			if rec.CompileS > 0 {
				measured++
			}
		}
	}
	if timeRec == nil || *timeRec != *tt {
		t.Errorf("journal's time %+v, want %+v", timeRec, tt)
	}
	if measured != len(res.Trace) {
		t.Errorf("%d journaled measurements carry a build time, want %d (one per candidate)", measured, len(res.Trace))
	}
}

// poolBackend is slowBackend with a compile pool: Prefetch starts the
// compiles of the announced candidates, each taking build, in the
// background; Build waits for what is left of a candidate's compile, or
// compiles it itself when it was not announced.
type poolBackend struct {
	slowBackend
	mu       sync.Mutex
	ready    map[string]time.Time // when a prefetched compile is done
	announce [][]string
	// slow, when set, is the compile time of the second new candidate of
	// each announcement (a batch with a candidate that compiles slowly).
	slow time.Duration
}

func (b *poolBackend) Prefetch(_ *kernels.Kernel, _ kernels.DType, cands []search.Candidate) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var keys []string
	fresh := 0
	for _, c := range cands {
		if _, ok := b.ready[c.Key()]; !ok {
			d := b.build
			if fresh == 1 && b.slow > 0 {
				d = b.slow
			}
			fresh++
			b.ready[c.Key()] = time.Now().Add(d)
		}
		keys = append(keys, c.Key())
	}
	b.announce = append(b.announce, keys)
}

func (b *poolBackend) Build(k *kernels.Kernel, dt kernels.DType, c search.Candidate) (device.Program, error) {
	b.mu.Lock()
	ready, ok := b.ready[c.Key()]
	b.mu.Unlock()
	wait := b.build
	if ok {
		wait = time.Until(ready)
	}
	time.Sleep(wait)
	return b.fakeBackend.wrap(k, dt, c, func(p *fakeProg) device.Program { return &slowProg{fakeProg: p, b: &b.slowBackend} })
}

// With batches, a backend with a compile pool builds the next candidates
// while the device times the first: the search waits for compiles far less
// than one at a time, for the same candidates measured.
func TestBatchesHideCompiles(t *testing.T) {
	run := func(batch int) (*paramfile.TuneTime, *poolBackend, int) {
		b := &poolBackend{slowBackend: slowBackend{fakeBackend: fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), threadsCap: 4},
			build: 15 * time.Millisecond, output: time.Millisecond, run: 2 * time.Millisecond}, ready: map[string]time.Time{}}
		cfg := Config{Strategy: "bo", Seed: 1, FinalSamples: 5, MaxEvals: 25, Warmup: time.Microsecond, Batch: batch}
		res, err := New(b, cfg).Run(context.Background(), gemvTask(t), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return res.Time, b, res.Entry.Evaluations
	}
	seq, _, nSeq := run(1)
	bat, b, nBat := run(4)
	t.Logf("one at a time: %+v\nbatches of 4: %+v", *seq, *bat)
	if nSeq != 25 || nBat != 25 {
		t.Fatalf("measured %d and %d candidates, want 25 each", nSeq, nBat)
	}
	if bat.CompileS > 0.6*seq.CompileS {
		t.Errorf("waited %.3fs for compiles in batches of 4, %.3fs one at a time", bat.CompileS, seq.CompileS)
	}
	if bat.BusyPct <= seq.BusyPct {
		t.Errorf("device busy %.0f%% in batches, %.0f%% one at a time", bat.BusyPct, seq.BusyPct)
	}
	big := 0
	for _, a := range b.announce {
		if len(a) > 1 {
			big++
		}
	}
	if big < 3 {
		t.Errorf("announced %v: want batches of several candidates", b.announce)
	}
}

// readyPool is poolBackend that says which compiles are done (Readier).
type readyPool struct {
	*poolBackend
	asked int
}

func (b *readyPool) Ready(_ *kernels.Kernel, _ kernels.DType, c search.Candidate) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.asked++
	at, ok := b.ready[c.Key()]
	return ok && !time.Now().Before(at)
}

// When a candidate of each batch compiles slowly, a backend that says
// which compiles are done (Readier) has the search measure the others
// first: it waits for compiles less, for the same number of candidates.
func TestReadyCandidatesMeasuredFirst(t *testing.T) {
	run := func(readier bool) (*paramfile.TuneTime, int, int) {
		pb := &poolBackend{slowBackend: slowBackend{fakeBackend: fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), threadsCap: 4},
			build: 2 * time.Millisecond, output: time.Millisecond, run: 2 * time.Millisecond}, ready: map[string]time.Time{}, slow: 40 * time.Millisecond}
		var b device.Backend = pb
		rp := &readyPool{poolBackend: pb}
		if readier {
			b = rp
		}
		cfg := Config{Strategy: "racing", Seed: 1, FinalSamples: 5, MaxEvals: 25, Warmup: time.Microsecond, Batch: 6}
		res, err := New(b, cfg).Run(context.Background(), gemvTask(t), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return res.Time, res.Entry.Evaluations, rp.asked
	}
	plain, nPlain, _ := run(false)
	ready, nReady, asked := run(true)
	t.Logf("in order: %+v\nready first: %+v", *plain, *ready)
	if nPlain != 25 || nReady != 25 {
		t.Fatalf("measured %d and %d candidates, want 25 each", nPlain, nReady)
	}
	if asked == 0 {
		t.Fatal("the search never asked which compiles are done")
	}
	if ready.CompileS > 0.7*plain.CompileS {
		t.Errorf("waited %.3fs for compiles measuring ready candidates first, %.3fs in order", ready.CompileS, plain.CompileS)
	}
}

// cacheBackend is fakeBackend with a compile cache: a build of a
// candidate it built before is a hit, any other a miss.
type cacheBackend struct {
	fakeBackend
	seen  map[string]bool
	stats compilecache.Stats
}

func (b *cacheBackend) Build(k *kernels.Kernel, dt kernels.DType, c search.Candidate) (device.Program, error) {
	if key := c.Key(); b.seen[key] {
		b.stats.Hits++
	} else {
		b.seen[key] = true
		b.stats.Misses++
	}
	return b.fakeBackend.Build(k, dt, c)
}

func (b *cacheBackend) CacheStats() compilecache.Stats { return b.stats }

// An entry's time counts the kernels it compiled and those it loaded from
// the backend's compile cache: all compiled on a first run, all loaded on
// a second run of the same candidates; the session summary adds them up.
func TestTimeCountsCacheHits(t *testing.T) {
	b := &cacheBackend{fakeBackend: fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), threadsCap: 4}, seen: map[string]bool{}}
	cfg := Config{Strategy: "exhaustive", Seed: 1, Samples: 2, FinalSamples: 3, MaxEvals: 5, Warmup: time.Microsecond}
	var results []*Result
	for run := 0; run < 2; run++ {
		before := b.stats
		res, err := New(b, cfg).Run(context.Background(), gemvTask(t), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		builds := int(b.stats.Hits + b.stats.Misses - before.Hits - before.Misses)
		if builds == 0 {
			t.Fatal("nothing built")
		}
		wantCompiled, wantHits := builds, 0
		if run == 1 {
			wantCompiled, wantHits = 0, builds
		}
		if tt := res.Entry.Time; tt.Compiled != wantCompiled || tt.CacheHits != wantHits {
			t.Errorf("run %d: compiled %d, cache hits %d; want %d, %d", run+1, tt.Compiled, tt.CacheHits, wantCompiled, wantHits)
		}
		results = append(results, res)
	}
	compiled, cached := (&SessionSummary{Results: results}).Compiles()
	if want := results[0].Entry.Time.Compiled; compiled != want || cached != results[1].Entry.Time.CacheHits {
		t.Errorf("summary: %d compiled, %d cached; want %d, %d", compiled, cached, want, results[1].Entry.Time.CacheHits)
	}
}

// The entries of a run share one enumeration of a family's space (its
// shape-free constraints and the device's limits), and each entry's space
// filtered from it holds exactly what a walk of the whole product finds,
// the per-shape constraints and the tune-only ones included.
func TestSpaceSharesEnumeration(t *testing.T) {
	tu := New(&fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), threadsCap: 4}, Config{})
	k, err := kernels.Get("lora") // BM ≤ m: a per-shape constraint on the CPU
	if err != nil {
		t.Fatal(err)
	}
	base := Task{Kernel: k, DType: kernels.F32}
	sizes := map[int]bool{}
	var within []search.Candidate
	for _, shape := range [][]int{{1, 64, 32, 8}, {16, 64, 32, 8}, {4, 48, 16, 16}} {
		task := base
		task.Cases = []kernels.Case{{Shape: shape}}
		sp, err := tu.Space(task)
		if err != nil {
			t.Fatal(err)
		}
		got := sp.Enumerate()
		if within == nil {
			within = sp.Within
		} else if &sp.Within[0] != &within[0] {
			t.Errorf("%v: the shared candidates were enumerated again", shape)
		}
		sp.Within = nil
		want := sp.Enumerate()
		if err := testutil.SameKeys(got, want); err != nil {
			t.Fatalf("%v: against a walk of the product: %v", shape, err)
		}
		sizes[len(got)] = true
	}
	if len(sizes) < 2 {
		t.Errorf("every shape has the same valid candidates (%v): the per-shape constraints were not exercised", sizes)
	}
}

// Once an entry's search ends, a backend with a compile pool is told what
// the next entry will build first: the candidates its search then measures
// first, so that their compiles overlap this entry's final timing.
func TestNextEntryAnnouncedAhead(t *testing.T) {
	b := &poolBackend{slowBackend: slowBackend{fakeBackend: fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), threadsCap: 4},
		build: 5 * time.Millisecond, output: time.Millisecond, run: time.Millisecond}, ready: map[string]time.Time{}}
	cfg := Config{Strategy: "bo", Seed: 1, FinalSamples: 3, MaxEvals: 12, Warmup: time.Microsecond, Batch: 4}
	first, next := gemvTask(t), gemvTask(t)
	next.Cases, next.Class = []kernels.Case{{Shape: []int{1, 64, 4000}}}, "largeK_smallN"
	tu := New(b, cfg)
	if _, err := tu.RunPlanned(context.Background(), first, Allotment{Share: time.Minute, Max: time.Minute, Next: &next}); err != nil {
		t.Fatal(err)
	}
	if len(b.announce) == 0 {
		t.Fatal("nothing announced")
	}
	ahead := b.announce[len(b.announce)-1]
	if len(ahead) == 0 || len(ahead) > firstAsksAhead {
		t.Fatalf("announced %d candidates ahead, want 1..%d", len(ahead), firstAsksAhead)
	}
	res, err := tu.RunPlanned(context.Background(), next, Allotment{Share: time.Minute, Max: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	measured := map[string]bool{}
	for _, tr := range res.Trace {
		measured[tr.Key] = true
	}
	for _, k := range ahead {
		if !measured[k] {
			t.Errorf("announced %s ahead; the next entry never measured it", k)
		}
	}
	if def := search.Candidate(res.Entry.Default.Params).Key(); ahead[0] != def {
		t.Errorf("first announced %s, want the next entry's default %s", ahead[0], def)
	}
}

// While the search waits for a compile on a backend that says which are
// done, the device samples the leaders instead of idling: busy rises well
// above a wait in Build, for the same candidates, and the candidate
// being built is not charged the leaders' samples.
func TestCompileWaitsFilled(t *testing.T) {
	run := func(readier bool) (*Result, *readyPool) {
		pb := &poolBackend{slowBackend: slowBackend{fakeBackend: fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), threadsCap: 4},
			build: 80 * time.Millisecond, output: time.Millisecond, run: 200 * time.Microsecond}, ready: map[string]time.Time{}}
		var b device.Backend = pb
		rp := &readyPool{poolBackend: pb}
		if readier {
			b = rp
		}
		cfg := Config{Strategy: "bo", Seed: 1, FinalSamples: 5, MaxEvals: 12, Warmup: time.Microsecond, Batch: 4}
		res, err := New(b, cfg).Run(context.Background(), gemvTask(t), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return res, rp
	}
	plain, _ := run(false)
	filled, _ := run(true)
	t.Logf("waiting in Build: %+v\nfilled: %+v", *plain.Time, *filled.Time)
	if plain.Entry.Evaluations != 12 || filled.Entry.Evaluations != 12 {
		t.Fatalf("measured %d and %d candidates, want 12 each", plain.Entry.Evaluations, filled.Entry.Evaluations)
	}
	if filled.Time.BusyPct < plain.Time.BusyPct+20 {
		t.Errorf("device busy %.0f%% sampling leaders during compiles, %.0f%% waiting", filled.Time.BusyPct, plain.Time.BusyPct)
	}
	most := 0
	for _, m := range filled.Trace {
		most = max(most, m.Samples)
		// A sample takes 0.2 ms a shape; a candidate charged the leaders'
		// samples taken while it compiled (80 ms) would show far more a
		// sample of its own.
		if m.Samples > 0 && m.MeasureS/float64(m.Samples) > 0.005 {
			t.Errorf("%s charged %.3fs of measuring for %d samples: the leaders' samples counted as its own", m.Key, m.MeasureS, m.Samples)
		}
	}
	if most <= 20 {
		t.Errorf("the most samples of a candidate is %d: the leaders gained none", most)
	}
}

// While the candidate due next compiles, others whose compiles are done
// (the strategy's guesses at its next batches) are measured ahead of their
// turn; the entry's result counts them and those the search asked for.
func TestMeasuredAheadCounted(t *testing.T) {
	pb := &poolBackend{slowBackend: slowBackend{fakeBackend: fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), threadsCap: 4},
		build: 30 * time.Millisecond, output: time.Millisecond, run: 200 * time.Microsecond}, ready: map[string]time.Time{}}
	cfg := Config{Strategy: "bo", Seed: 1, FinalSamples: 5, Warmup: time.Microsecond, Batch: 4}
	res, err := New(&readyPool{poolBackend: pb}, cfg).Run(context.Background(), gemvTask(t), 1500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d candidates, %d measured ahead, %d of them asked for; %+v", res.Entry.Evaluations, res.Ahead, res.AheadAsked, *res.Time)
	if res.Ahead == 0 || res.AheadAsked > res.Ahead {
		t.Errorf("%d measured ahead, %d of them asked for: want some ahead, no more asked than measured", res.Ahead, res.AheadAsked)
	}
	if res.Entry.Evaluations < res.Ahead {
		t.Errorf("%d candidates in the entry, %d measured ahead", res.Entry.Evaluations, res.Ahead)
	}
}

// sparePool is readyPool whose pool also builds spares (device.Sparer),
// each done as soon as named (a compile cache's hit): while a request's
// build is not done, a spare always is.
type sparePool struct {
	*readyPool
	lists int
}

func (b *sparePool) Spare(_ *kernels.Kernel, _ kernels.DType, cands []search.Candidate) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lists++
	for _, c := range cands {
		if _, ok := b.ready[c.Key()]; !ok {
			b.ready[c.Key()] = time.Now()
		}
	}
}

// On a backend with spares, the tuner hands them to the search, which
// measures them in the waits for compiles and counts them (Result.Spared,
// the trace's entry line).
func TestSparesMeasured(t *testing.T) {
	pb := &poolBackend{slowBackend: slowBackend{fakeBackend: fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), threadsCap: 4},
		build: 30 * time.Millisecond, output: time.Millisecond, run: 200 * time.Microsecond}, ready: map[string]time.Time{}}
	sp := &sparePool{readyPool: &readyPool{poolBackend: pb}}
	cfg := Config{Strategy: "bo", Seed: 1, FinalSamples: 5, Warmup: time.Microsecond, Batch: 4}
	res, err := New(sp, cfg).Run(context.Background(), gemvTask(t), 1500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d candidates, %d measured ahead, %d spares, %d spare lists", res.Entry.Evaluations, res.Ahead, res.Spared, sp.lists)
	if sp.lists < 2 || res.Spared == 0 || res.Spared > res.Ahead || res.Ahead > res.Entry.Evaluations {
		t.Errorf("%d spare lists, %d spares of %d measured ahead, %d candidates: want lists, spares among those ahead", sp.lists, res.Spared, res.Ahead, res.Entry.Evaluations)
	}
	if e := traceEntries("dev", res); len(e) != 1 || e[0].Spared != res.Spared {
		t.Errorf("trace entry %+v, want spared %d", e, res.Spared)
	}
}
