package main

import (
	"encoding/json"
	"io"

	"github.com/kerntune/kerntune/params"
	"math"

	"github.com/kerntune/kerntune/internal/trace"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner"
)

// traceRecords turns a task's trace into trace-file records (see package trace).
func traceRecords(device string, res *tuner.Result) []trace.Record {
	recs := make([]trace.Record, 0, len(res.Trace))
	for _, m := range res.Trace {
		if m.Samples == 0 && m.Err == "" {
			continue // created but never timed
		}
		p, err := search.ParseKey(m.Key)
		if err != nil {
			continue // keys come from Candidate.Key, so this does not happen
		}
		recs = append(recs, trace.Record{
			Device: device, Kernel: res.Task.Kernel.Name, DType: string(res.Task.DType), Key: res.Task.Key(),
			Params: p, MedianUS: round3(m.MedianUS), Samples: m.Samples, Err: m.Err,
		})
	}
	return recs
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// tunedJSON is what tune --json prints: the entries this run tuned, and
// for each whether it was written.
type tunedJSON struct {
	Device  string       `json:"device"`
	Out     string       `json:"out"`
	Entries []tunedEntry `json:"entries"`
}

type tunedEntry struct {
	Kernel  string        `json:"kernel"`
	Key     string        `json:"key"`
	Stopped string        `json:"stopped,omitempty"`
	Entry   *params.Entry `json:"entry"`
	// Decision says whether Entry was written to Out (added, replaced) or
	// the better entry already there was kept, and why.
	Decision *keepDecision `json:"decision,omitempty"`
}

func printTuneJSON(w io.Writer, device, out string, results []*tuner.Result, decisions []*keepDecision) error {
	tj := tunedJSON{Device: device, Out: out, Entries: []tunedEntry{}}
	for i, r := range results {
		te := tunedEntry{Kernel: r.Task.Kernel.Name, Key: r.Task.Key(), Stopped: r.Stopped, Entry: r.Entry}
		if i < len(decisions) {
			te.Decision = decisions[i]
		}
		tj.Entries = append(tj.Entries, te)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(tj)
}
