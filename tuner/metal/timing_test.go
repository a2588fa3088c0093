package metal

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// recorder stands in for Metal under the timing plan: command buffers and
// encoders are numbers, every call is recorded as a line, and each command
// buffer reports GPU timestamps from its number.
type recorder struct {
	calls    []string
	nextCB   int
	nextEnc  int
	inFlight int // committed, not yet waited for
	maxSeen  int
	released map[int]bool
	// failStatus makes command buffer n end with MTLCommandBufferStatusError.
	failStatus map[int]bool
	// span is each command buffer's GPU time; overlap starts command
	// buffer n+1 that much before n ends.
	span, overlap float64
}

func newRecorder() *recorder {
	return &recorder{released: map[int]bool{}, failStatus: map[int]bool{}, span: 1e-3}
}

func (r *recorder) log(format string, a ...any) { r.calls = append(r.calls, fmt.Sprintf(format, a...)) }

func (r *recorder) commandBuffer(retained bool) (int, error) {
	cb := r.nextCB
	r.nextCB++
	kind := "unretained"
	if retained {
		kind = "retained"
	}
	r.log("cb%d new %s", cb, kind)
	return cb, nil
}

func (r *recorder) concurrentEncoder(cb int) (int, error) {
	e := r.nextEnc
	r.nextEnc++
	r.log("cb%d encoder%d concurrent", cb, e)
	return e, nil
}

func (r *recorder) barrier(e int)           { r.log("encoder%d barrier buffers", e) }
func (r *recorder) waitFence(e, slot int)   { r.log("encoder%d wait fence%d", e, slot) }
func (r *recorder) updateFence(e, slot int) { r.log("encoder%d update fence%d", e, slot) }
func (r *recorder) endEncoding(e int)       { r.log("encoder%d end", e) }

func (r *recorder) commit(cb int) {
	r.inFlight++
	r.maxSeen = max(r.maxSeen, r.inFlight)
	r.log("cb%d commit", cb)
}

func (r *recorder) wait(cb int) {
	r.inFlight--
	r.log("cb%d wait", cb)
}

func (r *recorder) status(cb int) int {
	if r.failStatus[cb] {
		return mtlCommandBufferStatusError
	}
	return mtlCommandBufferStatusCompleted
}

func (r *recorder) errorText(cb int) string {
	return fmt.Sprintf("Internal Error (0000000e:Internal Error) in cb%d", cb)
}

func (r *recorder) gpuTimes(cb int) (float64, float64) {
	r.log("cb%d times", cb)
	start := 100 + float64(cb)*(r.span-r.overlap)
	return start, start + r.span
}

func (r *recorder) release(cb int) {
	r.released[cb] = true
	r.log("cb%d release", cb)
}

// candidatePlan is a candidate's plan whose dispatch records the input copy.
func candidatePlan(r *recorder) timingPlan[int, int] {
	return timingPlan[int, int]{api: r, dispatch: func(e, cp int) error {
		r.log("encoder%d dispatch copy%d", e, cp)
		return nil
	}}
}

// rotation hands out input copies 0, 1, …, copies-1 in turn, as
// gpuhost.Instance.Take does.
func rotation(copies int) func(int) []int {
	next := 0
	return func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = next % copies
			next++
		}
		return out
	}
}

// near compares times read from timestamps of about 100 s, which keep
// about 1e-14 s of precision.
func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Abs(b) }

// matching returns the recorded calls that contain s.
func matching(calls []string, s string) []string {
	var out []string
	for _, c := range calls {
		if strings.Contains(c, s) {
			out = append(out, c)
		}
	}
	return out
}

// TestTimingPlanEncodesAsMLX drives the sampling plan of a candidate and
// checks the calls Metal would see: per command buffer (unretained) one
// concurrent encoder, D dispatches on the rotated input copies with a
// buffer barrier between consecutive ones (D-1), the encoders of later
// command buffers waiting for the fence the previous one updated (two
// fences in turn, so that none waits for the fence it updates), at most
// maxInFlight command buffers committed and not waited for, every one
// waited for and released, and each sample its GPU time divided by D.
func TestTimingPlanEncodesAsMLX(t *testing.T) {
	for _, tc := range []struct{ n, d, copies int }{{7, 5, 3}, {1, 1, 2}, {4, 40, 6}, {2, 50, 1}} {
		t.Run(fmt.Sprintf("n%d_d%d_copies%d", tc.n, tc.d, tc.copies), func(t *testing.T) {
			r := newRecorder()
			secs, err := candidatePlan(r).samples(tc.n, tc.d, rotation(tc.copies))
			if err != nil {
				t.Fatal(err)
			}
			if len(secs) != tc.n {
				t.Fatalf("%d samples, want %d", len(secs), tc.n)
			}
			for i, s := range secs {
				if want := r.span / float64(tc.d); !near(s, want) {
					t.Errorf("sample %d = %g s, want the command buffer's %g s / %d = %g", i, s, r.span, tc.d, want)
				}
			}
			if r.nextCB != tc.n || r.nextEnc != tc.n {
				t.Errorf("%d command buffers and %d encoders for %d samples: want one concurrent encoder per command buffer", r.nextCB, r.nextEnc, tc.n)
			}
			if got := len(matching(r.calls, "new unretained")); got != tc.n {
				t.Errorf("%d command buffers with unretained references, want %d", got, tc.n)
			}
			if r.maxSeen > maxInFlight || (tc.n >= maxInFlight && r.maxSeen != maxInFlight) {
				t.Errorf("at most %d command buffers in flight, want %d", r.maxSeen, min(tc.n, maxInFlight))
			}
			next := 0
			for cb := range tc.n {
				enc := matching(r.calls, fmt.Sprintf("encoder%d ", cb))
				var want []string
				want = append(want, fmt.Sprintf("cb%d encoder%d concurrent", cb, cb))
				if cb > 0 {
					want = append(want, fmt.Sprintf("encoder%d wait fence%d", cb, (cb-1)%2))
				}
				for i := range tc.d {
					if i > 0 {
						want = append(want, fmt.Sprintf("encoder%d barrier buffers", cb))
					}
					want = append(want, fmt.Sprintf("encoder%d dispatch copy%d", cb, next%tc.copies))
					next++
				}
				want = append(want, fmt.Sprintf("encoder%d update fence%d", cb, cb%2), fmt.Sprintf("encoder%d end", cb))
				if !slices.Equal(enc, want) {
					t.Errorf("command buffer %d encodes\n  %s\nwant\n  %s", cb, strings.Join(enc, "\n  "), strings.Join(want, "\n  "))
				}
				if got := len(matching(enc, "barrier")); got != tc.d-1 {
					t.Errorf("command buffer %d: %d barriers for %d dispatches, want %d", cb, got, tc.d, tc.d-1)
				}
				if !r.released[cb] {
					t.Errorf("command buffer %d not released", cb)
				}
				// Committed only after its encoder ended; waited for, then
				// its timestamps read, then released.
				order := []string{fmt.Sprintf("encoder%d end", cb), fmt.Sprintf("cb%d commit", cb), fmt.Sprintf("cb%d wait", cb), fmt.Sprintf("cb%d times", cb), fmt.Sprintf("cb%d release", cb)}
				last := -1
				for _, o := range order {
					i := slices.Index(r.calls, o)
					if i <= last {
						t.Errorf("command buffer %d: %q out of order in %q", cb, o, r.calls)
					}
					last = i
				}
			}
			// The next command buffer is committed before the previous is
			// waited for: the GPU always has one queued.
			if tc.n >= 2 {
				if c1, w0 := slices.Index(r.calls, "cb1 commit"), slices.Index(r.calls, "cb0 wait"); c1 > w0 {
					t.Errorf("cb1 committed after cb0 was waited for: %q", r.calls)
				}
			}
		})
	}
}

// TestTimingPlanClipsOverlap: a command buffer that Metal starts before the
// previous one ended (waiting on the fence) counts from that end.
func TestTimingPlanClipsOverlap(t *testing.T) {
	r := newRecorder()
	r.overlap = 0.25e-3
	secs, err := candidatePlan(r).samples(4, 10, rotation(2))
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{1e-4, 0.75e-4, 0.75e-4, 0.75e-4}
	for i := range want {
		if !near(secs[i], want[i]) {
			t.Errorf("sample %d = %g, want %g (the first whole, later ones from the previous end)", i, secs[i], want[i])
		}
	}
}

// TestTimingPlanErrors: a failed command buffer's status and Metal's error
// come back naming the sample, and every committed command buffer is still
// waited for and released before the error returns (they use the
// instance's buffers); an encoding error ends the open encoder and
// releases the uncommitted command buffer.
func TestTimingPlanErrors(t *testing.T) {
	r := newRecorder()
	r.failStatus[1] = true
	_, err := candidatePlan(r).samples(6, 4, rotation(3))
	if err == nil {
		t.Fatal("a failed command buffer gave no error")
	}
	for _, s := range []string{"sample 2 of 6", "4 runs", "MTLCommandBufferStatusError", "Internal Error", "cb1"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
	if r.inFlight != 0 {
		t.Errorf("%d command buffers still in flight after the error", r.inFlight)
	}
	for cb := range r.nextCB {
		if !r.released[cb] {
			t.Errorf("command buffer %d not released", cb)
		}
	}
	if r.nextCB >= 6 {
		t.Errorf("%d command buffers encoded: sampling should stop after the failure", r.nextCB)
	}

	r = newRecorder()
	boom := errors.New("no pipeline for shape 1x7")
	calls := 0
	p := timingPlan[int, int]{api: r, dispatch: func(e, cp int) error {
		calls++
		if calls == 7 {
			return boom
		}
		return nil
	}}
	_, err = p.samples(5, 3, rotation(2))
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "encoding sample 3 of 5") || !strings.Contains(err.Error(), "run 1 of 3") {
		t.Fatalf("error %v: want the dispatch's error, naming sample 3 and its run 1", err)
	}
	if !slices.Contains(r.calls, "encoder2 end") || !r.released[2] || slices.Contains(r.calls, "cb2 commit") {
		t.Errorf("the failed command buffer's encoder must end and the buffer be released uncommitted: %q", r.calls)
	}
	if r.inFlight != 0 || !r.released[0] || !r.released[1] {
		t.Errorf("committed command buffers not drained after an encoding error: %q", r.calls)
	}

	r = newRecorder()
	r.failStatus[0] = true
	if _, err := candidatePlan(r).once([]int{0}, false); err == nil || !strings.Contains(err.Error(), "MTLCommandBufferStatusError") {
		t.Errorf("once: %v, want the failed status", err)
	}
}

// TestTimingPlanVendor: MPS's runs each encode into the command buffer
// themselves (no shared encoder, barrier or fence), in a command buffer
// with retained references.
func TestTimingPlanVendor(t *testing.T) {
	r := newRecorder()
	p := timingPlan[int, int]{api: r, vendor: func(cb, cp int) error {
		r.log("cb%d mps encode copy%d", cb, cp)
		return nil
	}}
	secs, err := p.samples(3, 4, rotation(3))
	if err != nil || len(secs) != 3 {
		t.Fatalf("%v, %v", secs, err)
	}
	if got := len(matching(r.calls, "new retained")); got != 3 {
		t.Errorf("%d retained command buffers, want 3", got)
	}
	if got := len(matching(r.calls, "mps encode")); got != 12 {
		t.Errorf("%d MPS encodes, want 12", got)
	}
	if r.nextEnc != 0 || len(matching(r.calls, "fence")) != 0 || len(matching(r.calls, "barrier")) != 0 {
		t.Errorf("MPS runs must not open an encoder of the plan's: %q", r.calls)
	}
	want := []string{"cb1 mps encode copy1", "cb1 mps encode copy2", "cb1 mps encode copy0", "cb1 mps encode copy1"}
	if got := matching(r.calls, "cb1 mps"); !slices.Equal(got, want) {
		t.Errorf("sample 2 encodes %q, want %q (copies rotate across samples)", got, want)
	}
}

func TestTimingPlanOnce(t *testing.T) {
	r := newRecorder()
	secs, err := candidatePlan(r).once([]int{0, 1, 2}, true)
	if err != nil || !near(secs, r.span) {
		t.Fatalf("once = %g, %v; want the command buffer's %g", secs, err, r.span)
	}
	if len(matching(r.calls, "wait fence")) != 0 || len(matching(r.calls, "barrier")) != 2 || !r.released[0] {
		t.Errorf("once: %q", r.calls)
	}
	r = newRecorder()
	if _, err := candidatePlan(r).once([]int{0}, false); err != nil || slices.Contains(r.calls, "cb0 times") {
		t.Errorf("an untimed run reads no timestamps: %q, %v", r.calls, err)
	}
	if _, err := candidatePlan(newRecorder()).samples(2, 0, rotation(1)); err == nil {
		t.Error("zero runs per sample accepted")
	}
}

func TestRunsLimit(t *testing.T) {
	tests := []struct {
		arch, name, env string
		want            int
		bad             bool
	}{
		{"applegpu_g13g", "Apple M1", "", 40, false},
		{"applegpu_g13s", "Apple M1 Max", "", 50, false},
		{"applegpu_g14d", "Apple M2 Ultra", "", 50, false},
		{"applegpu_g15p", "Apple A17 Pro", "", 20, false},
		{"applegpu_g16x", "Apple M9", "", 40, false},
		{"", "Apple M2 Max", "", 50, false},
		{"", "Apple M3 Ultra", "", 50, false},
		{"", "Apple M4 Pro", "", 40, false},
		{"", "AMD Radeon Pro 5500M", "", 40, false},
		{"applegpu_g13s", "Apple M1 Max", "8", 8, false},
		{"applegpu_g13s", "Apple M1 Max", " 12 ", 12, false},
		{"applegpu_g13s", "Apple M1 Max", "100000", maxDispatches, false},
		{"applegpu_g13s", "Apple M1 Max", "0", 0, true},
		{"applegpu_g13s", "Apple M1 Max", "-3", 0, true},
		{"applegpu_g13s", "Apple M1 Max", "forty", 0, true},
	}
	for _, tt := range tests {
		got, err := runsLimit(tt.arch, tt.name, tt.env)
		if (err != nil) != tt.bad || got != tt.want {
			t.Errorf("runsLimit(%q, %q, %q) = %d, %v; want %d (error %v)", tt.arch, tt.name, tt.env, got, err, tt.want, tt.bad)
		}
		if err != nil && !strings.Contains(err.Error(), mlxOpsEnv) {
			t.Errorf("error %q does not name %s", err, mlxOpsEnv)
		}
	}
}
