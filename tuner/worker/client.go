package worker

import (
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/kerntune/kerntune/internal/compilecache"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/device"
)

// ExitUnavailable is the exit status of a worker whose backend could not
// open because this machine lacks it (an error wrapping
// device.ErrUnavailable): the client's error then wraps
// device.ErrUnavailable too. It is sysexits.h's EX_UNAVAILABLE.
const ExitUnavailable = 69

// Options says how to start the worker process.
type Options struct {
	// Command is the worker's program and arguments; the program must call
	// Serve with the backend on its stdin and stdout.
	Command []string
	// Env is the worker's environment; nil means this process's.
	Env []string
	// Timeout limits one call that runs a candidate (build, verification
	// output, timing); default 2 minutes. Setup calls (starting the device,
	// loading problems) get five times as long, and at least 2 minutes.
	Timeout time.Duration
	// Log receives a line for each worker that was killed or lost.
	Log io.Writer
}

// Backend is a device.Backend whose calls run in a worker process.
type Backend struct {
	opts     Options
	mu       sync.Mutex
	p        *proc
	gen      int // incremented for each worker started
	info     device.DeviceInfo
	restarts int
	// sent counts the requests sent, by operation (tests read it).
	sent map[string]int
	// ready are the compiles the worker of generation readyGen said had
	// ended: an ended compile stays ended, so the search's questions about
	// it again cost no call.
	ready    map[compileKey]bool
	readyGen int
}

// compileKey names a candidate's compile (Ready).
type compileKey struct{ kernel, dtype, cand string }

// proc is one running worker.
type proc struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	enc     *gob.Encoder
	resps   chan *response // closed when the worker's output ends
	done    chan struct{}  // closed when the worker has exited
	waitErr error
	stderr  *tail
}

// Open starts a worker and asks it for its device.
func Open(opts Options) (*Backend, error) {
	if len(opts.Command) == 0 {
		return nil, errors.New("worker: no command")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Minute
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	b := &Backend{opts: opts}
	resp, err := b.call(&request{Op: opInfo}, b.setupLimit())
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("starting the worker %s: %w", strings.Join(opts.Command, " "), err)
	}
	b.info = resp.Info
	return b, nil
}

// setupLimit bounds calls that do not run a candidate.
func (b *Backend) setupLimit() time.Duration { return max(5*b.opts.Timeout, 2*time.Minute) }

// Restarts is how many workers were lost (crashed, killed) so far.
func (b *Backend) Restarts() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.restarts
}

func (b *Backend) start() error {
	cmd := exec.Command(b.opts.Command[0], b.opts.Command[1:]...)
	cmd.Env = b.opts.Env
	setProcAttr(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	p := &proc{cmd: cmd, stdin: stdin, enc: gob.NewEncoder(stdin), resps: make(chan *response), done: make(chan struct{}), stderr: &tail{max: stderrTail}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() {
		dec := gob.NewDecoder(stdout)
		for {
			var r response
			if err := dec.Decode(&r); err != nil {
				break
			}
			p.resps <- &r
		}
		close(p.resps)
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	b.p = p
	b.gen++
	return nil
}

// call sends one request and waits up to limit for the answer; the caller
// must not hold b.mu.
func (b *Backend) call(req *request, limit time.Duration) (*response, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.callLocked(req, limit)
}

func (b *Backend) callLocked(req *request, limit time.Duration) (*response, error) {
	if b.p == nil {
		if err := b.start(); err != nil {
			return nil, fmt.Errorf("starting the worker: %w", err)
		}
		// Opening the device can take a while: wait for it under the setup
		// limit, not the candidate's.
		if _, err := b.callLocked(&request{Op: opInfo}, b.setupLimit()); err != nil {
			return nil, fmt.Errorf("starting the worker: %w", err)
		}
	}
	p := b.p
	if b.sent == nil {
		b.sent = map[string]int{}
	}
	b.sent[req.Op]++
	if err := p.enc.Encode(req); err != nil {
		return nil, b.lost(p, req)
	}
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case r, ok := <-p.resps:
		if !ok {
			return nil, b.lost(p, req)
		}
		if r.Fatal {
			// The worker exits after a fatal answer: wait for it, a while.
			p.stdin.Close()
			kill := time.AfterFunc(10*time.Second, func() { p.cmd.Process.Kill() })
			b.reap(p)
			kill.Stop()
			fmt.Fprintf(b.opts.Log, "worker: device lost in %s (%s); starting a fresh worker\n", req.Op, r.Err)
			return nil, fmt.Errorf("%w: %s left the device unusable: %s", device.ErrCrashed, req.Op, r.Err)
		}
		if r.Err != "" {
			return r, errors.New(r.Err)
		}
		return r, nil
	case <-timer.C:
		p.cmd.Process.Kill()
		b.reap(p)
		fmt.Fprintf(b.opts.Log, "worker: %s ran past %s; killed it, starting a fresh worker\n", req.Op, limit)
		return nil, fmt.Errorf("%w: %s did not finish within %s; the worker was killed", device.ErrTimeout, req.Op, limit)
	}
}

// reap waits for a dead or killed worker and forgets it.
func (b *Backend) reap(p *proc) {
	for range p.resps {
	}
	<-p.done
	if b.p == p {
		b.p = nil
		b.restarts++
	}
}

// lost reports a worker whose output ended: it crashed. The error and the
// log name what it was doing (the candidate), why it died, the last call
// into the backend that its traceback shows, and the crash part of its
// stderr.
func (b *Backend) lost(p *proc, req *request) error {
	p.cmd.Process.Kill()
	b.reap(p)
	reason := "exited"
	if p.waitErr != nil {
		reason = p.waitErr.Error()
	}
	cr := readCrash(p.stderr.String())
	if p.cmd.ProcessState != nil && p.cmd.ProcessState.ExitCode() == ExitUnavailable {
		return fmt.Errorf("%w (in the worker): %s", device.ErrUnavailable, cr.reason)
	}
	if cr.reason != "" {
		reason += ": " + cr.reason
	}
	if cr.call != "" {
		label := "last backend call"
		if cr.metal {
			label = "last Metal call"
		}
		reason += "; " + label + ": " + cr.call
	}
	what := describe(req)
	fmt.Fprintf(b.opts.Log, "worker: crashed in %s (%s); starting a fresh worker\n", what, reason)
	if cr.excerpt != "" {
		fmt.Fprintf(b.opts.Log, "worker stderr:\n%s\n", indent(cr.excerpt))
		return fmt.Errorf("%w during %s: %s\nworker stderr:\n%s", device.ErrCrashed, what, reason, indent(cr.excerpt))
	}
	return fmt.Errorf("%w during %s: %s", device.ErrCrashed, what, reason)
}

// describe names a call for a crash report: its operation and, where it
// runs a program, the kernel, dtype and candidate (or baseline).
func describe(req *request) string {
	if req.Kernel == "" {
		return req.Op
	}
	prog := search.Candidate(req.Cand).Key()
	if req.Op == opBaseline || req.Baseline {
		prog = "baseline"
	}
	if prog == "" {
		return fmt.Sprintf("%s of %s %s", req.Op, req.Kernel, req.DType)
	}
	return fmt.Sprintf("%s of %s %s %s", req.Op, req.Kernel, req.DType, prog)
}

func indent(s string) string { return "  " + strings.ReplaceAll(s, "\n", "\n  ") }

// Info describes the worker's device. Its limits on candidates came with
// it, as data: the tuner checks candidates here, with no call per check.
func (b *Backend) Info() device.DeviceInfo { return b.info }

// Close ends the worker: it exits when its input closes.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.p
	if p == nil {
		return nil
	}
	p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
	}
	for range p.resps {
	}
	<-p.done
	b.p = nil
	return nil
}

// instance is a problem loaded in a worker; after a restart it is loaded
// again into the new worker on first use.
type instance struct {
	b      *Backend
	spec   *problemSpec
	copies int
	gen    int
	id     int
}

// Load sends the problem (its seed, not its inputs, when it has one).
func (b *Backend) Load(p *kernels.Problem, copies int) (device.Instance, error) {
	in := &instance{b: b, spec: specOf(p), copies: copies}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := in.ensure(); err != nil {
		return nil, err
	}
	return in, nil
}

func (in *instance) ensure() error {
	b := in.b
	if in.gen == b.gen && b.p != nil {
		return nil
	}
	resp, err := b.callLocked(&request{Op: opLoad, Problem: in.spec, Copies: in.copies}, b.setupLimit())
	if err != nil {
		return err
	}
	in.id, in.gen = resp.ID, b.gen
	return nil
}

func (in *instance) Close() error { return in.b.closeRemote(opCloseInst, &in.id, &in.gen) }

// closeRemote frees the object *id of worker generation *gen with op (both
// read under b.mu, as a reload writes them); an object of a lost worker
// went with it. *gen becomes -1, so that the object is not used again.
func (b *Backend) closeRemote(op string, id, gen *int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if *gen != b.gen || b.p == nil {
		return nil
	}
	_, err := b.callLocked(&request{Op: op, ID: *id}, b.setupLimit())
	*gen = -1
	return err
}

// program is a candidate (or the baseline) built in a worker; after a
// restart it is built again in the new worker on first use.
type program struct {
	b        *Backend
	kernel   string
	dtype    string
	cand     search.Candidate
	baseline bool
	gen      int
	id       int
}

// Build builds the candidate in the worker.
func (b *Backend) Build(k *kernels.Kernel, dt kernels.DType, c search.Candidate) (device.Program, error) {
	pr := &program{b: b, kernel: k.Name, dtype: string(dt), cand: c}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, err := pr.ensure(); err != nil {
		return nil, err
	}
	return pr, nil
}

// Baseline builds the backend's baseline in the worker.
func (b *Backend) Baseline(k *kernels.Kernel, dt kernels.DType) (device.Program, string, error) {
	pr := &program{b: b, kernel: k.Name, dtype: string(dt), baseline: true}
	b.mu.Lock()
	defer b.mu.Unlock()
	resp, err := pr.ensure()
	if err != nil || resp == nil || resp.ID == 0 {
		return nil, "", err
	}
	return pr, resp.Name, nil
}

func (pr *program) ensure() (*response, error) {
	b := pr.b
	if pr.gen == b.gen && b.p != nil {
		return nil, nil
	}
	op := opBuild
	if pr.baseline {
		op = opBaseline
	}
	resp, err := b.callLocked(&request{Op: op, Kernel: pr.kernel, DType: pr.dtype, Cand: pr.cand}, b.opts.Timeout)
	if err != nil {
		return nil, err
	}
	pr.id, pr.gen = resp.ID, b.gen
	return resp, nil
}

// exec runs op of pr on ti, loading both into a fresh worker if needed.
func (pr *program) exec(op string, ti device.Instance, n int) (*response, error) {
	return pr.execReq(&request{Op: op, N: n}, ti)
}

// execReq runs req (its ID and Inst set here) of pr on ti, loading both
// into a fresh worker if needed.
func (pr *program) execReq(req *request, ti device.Instance) (*response, error) {
	in, ok := ti.(*instance)
	if !ok || in.b != pr.b {
		return nil, fmt.Errorf("worker: foreign instance %T", ti)
	}
	b := pr.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := in.ensure(); err != nil {
		return nil, err
	}
	if _, err := pr.ensure(); err != nil {
		return nil, err
	}
	req.ID, req.Inst = pr.id, in.id
	// The program's identity travels for a crash report only (describe).
	req.Kernel, req.DType, req.Cand, req.Baseline = pr.kernel, pr.dtype, pr.cand, pr.baseline
	return b.callLocked(req, b.opts.Timeout)
}

func (pr *program) Run(ti device.Instance, n int) ([]float64, error) {
	resp, err := pr.exec(opRun, ti, n)
	if err != nil {
		return nil, err
	}
	return resp.Times, nil
}

func (pr *program) Output(ti device.Instance) ([]float32, error) {
	resp, err := pr.exec(opOutput, ti, 0)
	if err != nil {
		return nil, err
	}
	return resp.Out, nil
}

// OutputSample runs the kernel as Output does and brings back only the
// sample's rows (device.SampledOutputer): a large output need not cross the pipe.
func (pr *program) OutputSample(ti device.Instance, s kernels.RowSample) ([]float32, int, int, error) {
	resp, err := pr.execReq(&request{Op: opOutput, Sample: &s}, ti)
	if err != nil {
		return nil, 0, 0, err
	}
	return resp.Out, resp.FirstBad, resp.OutLen, nil
}

func (pr *program) Close() error { return pr.b.closeRemote(opCloseProg, &pr.id, &pr.gen) }

// Prefetch forwards the batch to the worker's backend (GPU compile pools).
func (b *Backend) Prefetch(k *kernels.Kernel, dt kernels.DType, cands []search.Candidate) {
	b.prefetch(k, dt, cands, false)
}

// Spare forwards low-priority candidates to the worker's backend
// (device.Sparer; a backend without a compile pool ignores them).
func (b *Backend) Spare(k *kernels.Kernel, dt kernels.DType, cands []search.Candidate) {
	b.prefetch(k, dt, cands, true)
}

func (b *Backend) prefetch(k *kernels.Kernel, dt kernels.DType, cands []search.Candidate, spare bool) {
	req := &request{Op: opPrefetch, Kernel: k.Name, DType: string(dt), Spare: spare}
	for _, c := range cands {
		req.Cands = append(req.Cands, c)
	}
	b.call(req, b.setupLimit())
}

// Ready asks the worker's backend whether a candidate's compile has ended
// (device.Readier): one short call per question. With no worker running
// (none started yet, or the last one lost) it is false without a call, as
// a fresh worker has compiled nothing.
func (b *Backend) Ready(k *kernels.Kernel, dt kernels.DType, c search.Candidate) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.p == nil {
		return false
	}
	key := compileKey{k.Name, string(dt), c.Key()}
	if b.readyGen == b.gen && b.ready[key] {
		return true
	}
	resp, err := b.callLocked(&request{Op: opReady, Kernel: k.Name, DType: string(dt), Cand: c}, b.setupLimit())
	if err != nil || !resp.Ready {
		return false
	}
	if b.readyGen != b.gen || b.ready == nil {
		b.ready, b.readyGen = map[compileKey]bool{}, b.gen
	}
	b.ready[key] = true
	return true
}

// CacheStats is the worker backend's compile-cache counters since the
// worker started (device.CacheReporter); zero when no worker runs, when
// the call fails, or when the backend has no cache. A restarted worker
// counts from zero again, so an entry's counts are then a lower bound.
func (b *Backend) CacheStats() compilecache.Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.p == nil {
		return compilecache.Stats{}
	}
	resp, err := b.callLocked(&request{Op: opCache}, b.setupLimit())
	if err != nil {
		return compilecache.Stats{}
	}
	return resp.Cache
}

// BuildSeconds is the worker backend's compile seconds since the worker
// started (device.BuildTimer), asked with the cache's counters; 0 as
// CacheStats is zero, and a restarted worker counts from zero again.
func (b *Backend) BuildSeconds() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.p == nil {
		return 0
	}
	resp, err := b.callLocked(&request{Op: opCache}, b.setupLimit())
	if err != nil {
		return 0
	}
	return resp.BuildS
}

// tail keeps the last max bytes written to it: the worker's stderr, where
// a crash leaves its reason.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// Stderr bounds: the tail read for a crash's reason and traceback, and the
// excerpt of it kept in the log and the journal.
const (
	stderrTail    = 64 << 10
	stderrExcerpt = 8 << 10
)

// crashMarks start the lines that say why a process died, in order of
// preference: an Objective-C exception names its class and reason (an
// unrecognized selector, say) and is followed by the SIGABRT it raises; a
// Go panic or fatal error; a fatal signal, Go's ("SIGABRT: abort",
// "SIGSEGV: segmentation violation") or the runtime's "unexpected signal".
var crashMarks = []string{
	"*** Terminating app due to uncaught exception",
	"panic: ", "fatal error: ",
	"SIGABRT", "SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGTRAP", "unexpected signal",
}

// crashReport is what a dead worker's stderr says about its death.
type crashReport struct {
	reason  string // the line saying why, or the last line
	call    string // the innermost backend frame of the crashing goroutine: "metal.(*Backend).compileOptions (backend_darwin.go:312)"
	metal   bool   // call is in the Metal backend
	excerpt string // stderr from the first crash line on (the last lines when there is none), at most stderrExcerpt bytes
}

// readCrash reads a worker's stderr: the crash line, the last call into a
// backend package named by the crashing goroutine's traceback (Go prints
// the crashing goroutine first, even for a signal raised in C code), and
// the excerpt kept in the log and the journal.
func readCrash(stderr string) crashReport {
	stderr = strings.TrimRight(stderr, "\n")
	if strings.TrimSpace(stderr) == "" {
		return crashReport{}
	}
	lines := strings.Split(stderr, "\n")
	var r crashReport
	first := -1
	for j, mark := range crashMarks {
		for i, l := range lines {
			l = strings.TrimSpace(l)
			at := 0
			if j == 0 { // NSLog puts a date and the process before it
				at = strings.Index(l, mark)
			} else if !strings.HasPrefix(l, mark) {
				at = -1
			}
			if at >= 0 {
				if r.reason == "" {
					r.reason = l[at:]
				}
				if first < 0 || i < first {
					first = i
				}
				break
			}
		}
	}
	if r.reason == "" {
		r.reason = strings.TrimSpace(lines[len(lines)-1])
	}
	r.call, r.metal = backendFrame(lines)
	if first >= 0 {
		r.excerpt = strings.Join(lines[first:], "\n")
		if len(r.excerpt) > stderrExcerpt {
			r.excerpt = r.excerpt[:stderrExcerpt] + fmt.Sprintf("\n… (%d more bytes)", len(r.excerpt)-stderrExcerpt)
		}
	} else {
		r.excerpt = stderr
		if len(r.excerpt) > stderrExcerpt {
			r.excerpt = "… " + r.excerpt[len(r.excerpt)-stderrExcerpt:]
		}
	}
	return r
}

// backendPkg prefixes the functions of kerntune's backend packages in a
// Go traceback.
const backendPkg = "github.com/kerntune/kerntune/tuner/"

// backendFrame is the innermost frame of a backend package (not this one)
// in the first goroutine of a Go traceback, as "pkg.func (file.go:line)",
// and whether it is the Metal backend's.
func backendFrame(lines []string) (string, bool) {
	in := false
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "goroutine "):
			if in {
				return "", false // only the crashing goroutine's frames count
			}
			in = true
			continue
		case !in || l == "" || strings.HasPrefix(l, "\t"):
			if in && l == "" {
				return "", false
			}
			continue
		}
		fn, ok := strings.CutPrefix(l, backendPkg)
		if !ok || strings.HasPrefix(fn, "worker.") {
			continue
		}
		fn = stripArgs(fn)
		if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "\t") {
			loc, _, _ := strings.Cut(strings.TrimSpace(lines[i+1]), " ")
			fn += " (" + loc[strings.LastIndex(loc, "/")+1:] + ")"
		}
		return fn, strings.HasPrefix(fn, "metal.")
	}
	return "", false
}

// stripArgs drops a traceback frame's argument list: the parenthesized
// group that ends the line ("f(0x1, {...})" → "f"; "(*T).m(...)" → "(*T).m").
func stripArgs(frame string) string {
	if !strings.HasSuffix(frame, ")") {
		return frame
	}
	depth := 0
	for i := len(frame) - 1; i >= 0; i-- {
		switch frame[i] {
		case ')':
			depth++
		case '(':
			if depth--; depth == 0 {
				return frame[:i]
			}
		}
	}
	return frame
}

// Command is the command line that runs this program as a worker for the
// named backend: the hidden "__worker" subcommand of kerntune.
func Command(backend string) ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the kerntune executable to start a worker: %w", err)
	}
	return []string{exe, "__worker", "--backend", backend}, nil
}
