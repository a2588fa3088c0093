package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/kerntune/kerntune/params/paramfile"
)

// Record is one measured (or failed) candidate.
type Record struct {
	Device   string         `json:"device,omitempty"`
	Kernel   string         `json:"kernel"`
	DType    string         `json:"dtype"`
	Key      string         `json:"key"`
	Params   map[string]int `json:"params"`
	MedianUS float64        `json:"median_us,omitempty"`
	Samples  int            `json:"samples"`
	Err      string         `json:"err,omitempty"`
	CompileS float64        `json:"compile_s,omitempty"`
	VerifyS  float64        `json:"verify_s,omitempty"`
	MeasureS float64        `json:"measure_s,omitempty"`
	// Run identifies the tuning run (see the package documentation).
	Run string `json:"run,omitempty"`
}

// KindEntry is the kind of a trace line about a whole entry.
const KindEntry = "entry"

// Entry is a line about a whole entry: where its tuning time went.
type Entry struct {
	Kind   string              `json:"kind"` // KindEntry
	Device string              `json:"device,omitempty"`
	Kernel string              `json:"kernel"`
	DType  string              `json:"dtype"`
	Key    string              `json:"key"`
	Time   *paramfile.TuneTime `json:"time"`
	// BuildS is the backend's compile seconds during the entry, summed over
	// its compile pool (tuner.Result.BuildS); absent where it does not say.
	BuildS float64 `json:"build_s,omitempty"`
	// Ahead is how many candidates were measured ahead of their turn while
	// the one due next compiled, AheadAsked how many of those the search
	// asked for later, Spared how many of those measured ahead were spares
	// (tuner.Result).
	Ahead      int    `json:"ahead,omitempty"`
	AheadAsked int    `json:"ahead_asked,omitempty"`
	Spared     int    `json:"spared,omitempty"`
	Run        string `json:"run,omitempty"`
}

// EntryKey is the record's key in the form of a params-file entry key.
func (r Record) EntryKey() string {
	if strings.Contains(r.Key, "/") || r.DType == "" {
		return r.Key
	}
	return r.DType + "/" + r.Key
}

// Append writes records as JSON lines at the end of path, creating it;
// entries (lines of kind KindEntry) follow the records.
func Append(path string, recs []Record, entries ...Entry) error {
	if len(recs) == 0 && len(entries) == 0 {
		return nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("trace %s: %w", path, err)
		}
	}
	for _, e := range entries {
		e.Kind = KindEntry
		if err := enc.Encode(e); err != nil {
			return fmt.Errorf("trace %s: %w", path, err)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	// One write per entry, so that an interrupted run leaves whole lines.
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		return fmt.Errorf("trace %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("trace %s: %w", path, err)
	}
	return nil
}

// MaxFileSize is the largest trace (or journal read as a trace) that
// ReadFile reads: 256 MiB, some hundred thousand candidates. A larger file
// is refused, and a device such as /dev/zero is read no further.
const MaxFileSize = 256 << 20

// maxLine is the longest line Read takes.
const maxLine = 16 << 20

// ReadFile reads a trace file of at most MaxFileSize bytes; see Read.
func ReadFile(path string) ([]Record, error) {
	recs, _, err := readFileAll(path)
	return recs, err
}

// Read parses JSON lines. Blank lines, lines without kernel or key (other
// kinds of journal lines) and entry lines are skipped; a line that is not a
// JSON object, or a final line cut short by an interrupted write, is an
// error naming its line.
func Read(r io.Reader) ([]Record, error) {
	recs, _, err := readAll(r)
	return recs, err
}

// ReadFileEntries reads the entry lines of a trace file, as ReadFile reads
// its records.
func ReadFileEntries(path string) ([]Entry, error) {
	_, entries, err := readFileAll(path)
	return entries, err
}

// readFileAll reads a trace file of at most MaxFileSize bytes: its records
// and its entry lines; errors name the file.
func readFileAll(path string) ([]Record, []Entry, error) {
	data, err := paramfile.ReadFileLimit(path, MaxFileSize)
	var tl *paramfile.TooLargeError
	if errors.As(err, &tl) {
		return nil, nil, fmt.Errorf("%s: %s", path, tl.Reason("a trace file"))
	}
	if err != nil {
		return nil, nil, err
	}
	recs, entries, err := readAll(bytes.NewReader(data))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return recs, entries, nil
}

// ReadEntries parses the entry lines (kind KindEntry) of a trace, in order;
// errors are those of Read.
func ReadEntries(r io.Reader) ([]Entry, error) {
	_, entries, err := readAll(r)
	return entries, err
}

func readAll(r io.Reader) ([]Record, []Entry, error) {
	var out []Record
	var entries []Entry
	// Lines without a run (older traces) are given one from their place:
	// an entry's records up to its entry line are one run.
	ended := map[string]int{}
	position := func(run, device, kernel, entryKey string) string {
		if run != "" {
			return run
		}
		return fmt.Sprintf("#%d", ended[device+"\x00"+kernel+"\x00"+entryKey])
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxLine)
	n := 1
	for ; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		// Lines of other kinds (a journal's, whose samples are an array)
		// are skipped before their fields are decoded as a Record's.
		var head struct{ Kernel, Key any }
		if err := json.Unmarshal(line, &head); err != nil {
			return nil, nil, fmt.Errorf("line %d: not a trace record: %v", n, err)
		}
		if k, _ := head.Kernel.(string); k == "" {
			continue
		}
		if k, _ := head.Key.(string); k == "" {
			continue
		}
		var rec struct {
			Record
			Kind       string              `json:"kind"`
			Time       *paramfile.TuneTime `json:"time"`
			BuildS     float64             `json:"build_s"`
			Ahead      int                 `json:"ahead"`
			AheadAsked int                 `json:"ahead_asked"`
			Spared     int                 `json:"spared"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			return nil, nil, fmt.Errorf("line %d: not a trace record: %v", n, err)
		}
		if rec.Kernel == "" || rec.Key == "" {
			continue
		}
		if rec.Kind == KindEntry {
			if rec.Time == nil {
				return nil, nil, fmt.Errorf("line %d: an entry line without its time object", n)
			}
			ek := rec.EntryKey()
			entries = append(entries, Entry{Kind: KindEntry, Device: rec.Device, Kernel: rec.Kernel, DType: rec.DType, Key: rec.Key, Time: rec.Time,
				BuildS: rec.BuildS, Ahead: rec.Ahead, AheadAsked: rec.AheadAsked, Spared: rec.Spared, Run: position(rec.Run, rec.Device, rec.Kernel, ek)})
			ended[rec.Device+"\x00"+rec.Kernel+"\x00"+ek]++
			continue
		}
		if rec.MedianUS < 0 {
			return nil, nil, fmt.Errorf("line %d: median_us must not be negative, got %g", n, rec.MedianUS)
		}
		rec.Record.Run = position(rec.Run, rec.Device, rec.Kernel, rec.EntryKey())
		out = append(out, rec.Record)
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, nil, fmt.Errorf("line %d: longer than %s: not a trace", n, paramfile.SizeString(maxLine))
	} else if err != nil {
		return nil, nil, err
	}
	return out, entries, nil
}

// Latest keeps, for every device, entry and candidate, the last record: a
// trace appended to by several runs describes the newest one.
func Latest(recs []Record) []Record {
	idx := map[string]int{}
	var out []Record
	for _, r := range recs {
		k := r.Device + "\x00" + r.Kernel + "\x00" + r.EntryKey() + "\x00" + paramsKey(r.Params)
		if i, ok := idx[k]; ok {
			out[i] = r
			continue
		}
		idx[k] = len(out)
		out = append(out, r)
	}
	return out
}

func paramsKey(p map[string]int) string {
	b, _ := json.Marshal(p) // map keys are sorted by encoding/json
	return string(b)
}
