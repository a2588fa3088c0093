package worker

import (
	"encoding/gob"
	"errors"
	"fmt"
	"io"

	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/device"
)

// Serve answers calls read from in with b until in is closed. It returns
// nil at the end of in, and an error when the device was lost (the caller
// exits) or the stream is broken.
func Serve(b device.Backend, in io.Reader, out io.Writer) error {
	s := &server{b: b, insts: map[int]device.Instance{}, progs: map[int]device.Program{}}
	dec, enc := gob.NewDecoder(in), gob.NewEncoder(out)
	for {
		var req request
		if err := dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("worker: reading a call: %w", err)
		}
		resp, err := s.handle(&req)
		if err != nil {
			resp.Err = err.Error()
			if dl, ok := b.(device.DeviceLoser); ok && dl.DeviceLost(err) {
				resp.Fatal = true
			}
		}
		if werr := enc.Encode(resp); werr != nil {
			return fmt.Errorf("worker: answering %s: %w", req.Op, werr)
		}
		if resp.Fatal {
			return fmt.Errorf("worker: device lost: %s", resp.Err)
		}
	}
}

type server struct {
	b     device.Backend
	next  int
	insts map[int]device.Instance
	progs map[int]device.Program
}

func (s *server) handle(req *request) (*response, error) {
	resp := &response{}
	switch req.Op {
	case opInfo:
		resp.Info = s.b.Info()
	case opLoad:
		if req.Problem == nil {
			return resp, errors.New("load without a problem")
		}
		p, err := req.Problem.problem()
		if err != nil {
			return resp, err
		}
		inst, err := s.b.Load(p, req.Copies)
		if err != nil {
			return resp, err
		}
		s.next++
		s.insts[s.next] = inst
		resp.ID = s.next
	case opCloseInst:
		if inst, ok := s.insts[req.ID]; ok {
			delete(s.insts, req.ID)
			return resp, inst.Close()
		}
	case opBuild, opBaseline:
		k, dt, err := kernelDType(req.Kernel, req.DType)
		if err != nil {
			return resp, err
		}
		var prog device.Program
		if req.Op == opBuild {
			prog, err = s.b.Build(k, dt, search.Candidate(req.Cand))
		} else {
			prog, resp.Name, err = s.b.Baseline(k, dt)
		}
		if err != nil || prog == nil {
			return resp, err
		}
		s.next++
		s.progs[s.next] = prog
		resp.ID = s.next
	case opPrefetch:
		pf, ok := s.b.(device.Prefetcher)
		sp, spares := s.b.(device.Sparer)
		if ok && (!req.Spare || spares) {
			k, dt, err := kernelDType(req.Kernel, req.DType)
			if err != nil {
				return resp, err
			}
			cands := make([]search.Candidate, len(req.Cands))
			for i, c := range req.Cands {
				cands[i] = c
			}
			if req.Spare {
				sp.Spare(k, dt, cands)
			} else {
				pf.Prefetch(k, dt, cands)
			}
		}
	case opCache:
		if cr, ok := s.b.(device.CacheReporter); ok {
			resp.Cache = cr.CacheStats()
		}
		if bt, ok := s.b.(device.BuildTimer); ok {
			resp.BuildS = bt.BuildSeconds()
		}
	case opReady:
		if rd, ok := s.b.(device.Readier); ok {
			k, dt, err := kernelDType(req.Kernel, req.DType)
			if err != nil {
				return resp, err
			}
			resp.Ready = rd.Ready(k, dt, search.Candidate(req.Cand))
		}
	case opRun, opOutput:
		prog, inst := s.progs[req.ID], s.insts[req.Inst]
		if prog == nil || inst == nil {
			return resp, fmt.Errorf("%s: unknown program %d or instance %d", req.Op, req.ID, req.Inst)
		}
		var err error
		switch {
		case req.Op == opRun:
			resp.Times, err = prog.Run(inst, req.N)
		case req.Sample != nil:
			// Only the sample crosses the pipe (device.SampledOutputer),
			// taken on the device where the backend can.
			if so, ok := prog.(device.SampledOutputer); ok {
				resp.Out, resp.FirstBad, resp.OutLen, err = so.OutputSample(inst, *req.Sample)
				break
			}
			var out []float32
			if out, err = prog.Output(inst); err == nil {
				resp.Out, resp.FirstBad = req.Sample.Extract(out)
				resp.OutLen = len(out)
			}
		default:
			resp.Out, err = prog.Output(inst)
		}
		return resp, err
	case opCloseProg:
		if prog, ok := s.progs[req.ID]; ok {
			delete(s.progs, req.ID)
			return resp, prog.Close()
		}
	default:
		return resp, fmt.Errorf("unknown operation %q", req.Op)
	}
	return resp, nil
}
