package tuner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/kerntune/kerntune/params/paramfile"
)

// JournalSuffix names the journal kept next to the params file:
// hardware_params.json.journal.
const JournalSuffix = ".journal"

// MaxJournalSize is the largest journal a resumed run reads: 256 MiB, far
// more than a run measures.
const MaxJournalSize = 256 << 20

// FileJournal is a Journal kept as a file of JSON lines, each appended and
// fsynced before the tuner goes on, so a killed run loses at most the
// measurement it was making.
type FileJournal struct {
	path string
	mu   sync.Mutex
	f    *os.File
	old  []Record
	done map[string]bool
	err  error
	// spent is the largest ElapsedS of the interrupted run's records;
	// budget the BudgetS of its last session record (0: none recorded).
	spent, budget time.Duration
	// newline: write a line break before the first record.
	newline bool
}

// OpenFileJournal opens the journal at path for appending. With resume it
// first reads the records of the interrupted run (a last line cut short by
// a kill is ignored); without, the file must not exist yet.
func OpenFileJournal(path string, resume bool) (*FileJournal, error) {
	j := &FileJournal{path: path, done: map[string]bool{}}
	if resume {
		data, err := paramfile.ReadFileLimit(path, MaxJournalSize)
		var tl *paramfile.TooLargeError
		if errors.As(err, &tl) {
			return nil, fmt.Errorf("%s: %s", path, tl.Reason("a journal"))
		}
		if err != nil {
			return nil, err
		}
		lines := bytes.Split(data, []byte("\n"))
		for i, line := range lines {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var rec Record
			if err := json.Unmarshal(line, &rec); err != nil {
				if i == len(lines)-1 {
					break // the line being written when the run was killed
				}
				return nil, fmt.Errorf("%s line %d: %w", path, i+1, err)
			}
			j.old = append(j.old, rec)
			if rec.Kind == RecordDone {
				j.done[doneKey(rec.Device, rec.Kernel, rec.Entry)] = true
			}
			j.spent = max(j.spent, seconds(rec.ElapsedS))
			if rec.Kind == RecordSession && rec.BudgetS > 0 {
				j.budget = seconds(rec.BudgetS)
			}
		}
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_APPEND
	if !resume {
		flags |= os.O_EXCL
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return nil, err
	}
	// A torn last line would glue onto the next record: the first record
	// starts a fresh line (not before, so that a refused resume leaves
	// the journal as it was).
	j.newline = resume && len(j.old) > 0
	j.f = f
	return j, nil
}

func doneKey(device, kernel, entry string) string { return device + "\x00" + kernel + "\x00" + entry }

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// Spent is the wall time the interrupted run (or runs) had spent when its
// last record was written; 0 for a new journal or one without times.
func (j *FileJournal) Spent() time.Duration { return j.spent }

// Budget is the wall-time budget the interrupted run recorded; 0 when it
// recorded none.
func (j *FileJournal) Budget() time.Duration { return j.budget }

// Path is the journal's file name.
func (j *FileJournal) Path() string { return j.path }

// Record appends rec and syncs the file. The first write error is kept
// (Err) and later records are dropped: the caller stops the run.
func (j *FileJournal) Record(rec Record) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return
	}
	line, err := json.Marshal(rec)
	if err == nil {
		w := bufio.NewWriter(j.f)
		if j.newline {
			w.WriteByte('\n')
			j.newline = false
		}
		w.Write(line)
		w.WriteByte('\n')
		err = w.Flush()
	}
	if err == nil {
		err = j.f.Sync()
	}
	if err != nil {
		j.err = fmt.Errorf("writing the journal %s: %w", j.path, err)
	}
}

// Err is the first write error, or nil.
func (j *FileJournal) Err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

// taskRecords is the records of recs for one task, in order.
func taskRecords(recs []Record, device, kernel, entry string) []Record {
	var out []Record
	for _, r := range recs {
		if r.Device == device && r.Kernel == kernel && r.Entry == entry {
			out = append(out, r)
		}
	}
	return out
}

// Replay returns the interrupted run's records of one task.
func (j *FileJournal) Replay(device, kernel, entry string) []Record {
	return taskRecords(j.old, device, kernel, entry)
}

// Done reports whether the interrupted run finished the task.
func (j *FileJournal) Done(device, kernel, entry string) bool {
	return j.done[doneKey(device, kernel, entry)]
}

// MarkDone records that a task's entry was written (or that it failed for good).
func (j *FileJournal) MarkDone(device, kernel, entry, errMsg string) {
	j.Record(Record{Kind: RecordDone, Device: device, Kernel: kernel, Entry: entry, Err: errMsg})
}

// Close closes the file; with remove (the run finished) it deletes it.
func (j *FileJournal) Close(remove bool) error {
	err := j.f.Close()
	if remove {
		if rerr := os.Remove(j.path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			return rerr
		}
	}
	return err
}
