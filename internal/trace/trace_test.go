package trace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/params/paramfile"
)

func TestAppendRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	a := []Record{
		{Device: "d", Kernel: "gemv_nt", DType: "f32", Key: "f32/tiny", Params: map[string]int{"BN": 4}, MedianUS: 10, Samples: 3},
		{Device: "d", Kernel: "gemv_nt", DType: "f32", Key: "f32/tiny", Params: map[string]int{"BN": 8}, Err: "build: x"},
	}
	b := []Record{{Device: "d", Kernel: "gemv_nt", DType: "f32", Key: "f32/tiny", Params: map[string]int{"BN": 4}, MedianUS: 7, Samples: 9}}
	if err := Append(path, a); err != nil {
		t.Fatal(err)
	}
	if err := Append(path, b); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path)
	if err != nil || len(got) != 3 {
		t.Fatalf("ReadFile: %d records, %v", len(got), err)
	}
	latest := Latest(got)
	if len(latest) != 2 || latest[0].MedianUS != 7 || latest[1].Err != "build: x" {
		t.Fatalf("Latest: %+v; want BN=4 from the second run, then BN=8", latest)
	}
}

// A trace is read up to MaxFileSize: a device that never ends is an error
// naming it and the limit.
func TestReadFileLimit(t *testing.T) {
	testutil.RefusesDevZero(t, func(path string) error {
		_, err := ReadFile(path)
		return err
	}, "/dev/zero: not a regular file, and it yields more than 256 MiB, the limit of a trace file")
}

func TestRead(t *testing.T) {
	tests := []struct {
		name, in string
		n        int
		key      string // EntryKey of the first record
		err      string
	}{
		{"class without dtype", `{"kernel":"softmax","dtype":"f16","key":"short","params":{"ROWS":1},"median_us":3}`, 1, "f16/short", ""},
		{"other journal lines skipped", "{\"event\":\"start\"}\n\n{\"kernel\":\"softmax\",\"dtype\":\"f32\",\"key\":\"f32/long\",\"params\":{}}", 1, "f32/long", ""},
		{"not JSON", "{\"kernel\":\"softmax\"}\n{oops", 0, "", "line 2"},
		{"cut short", `{"kernel":"softmax","key":"f32/long","par`, 0, "", "line 1"},
		{"negative time", `{"kernel":"softmax","key":"f32/long","median_us":-1}`, 0, "", "median_us"},
		{"a journal's lines skipped", "{\"kind\":\"measure\",\"device\":\"d\",\"kernel\":\"softmax\",\"entry\":\"f32/long\",\"cand\":\"ROWS=1\",\"samples\":[1e-5,2e-5]}\n{\"kernel\":\"softmax\",\"key\":\"f32/long\",\"params\":{}}", 1, "f32/long", ""},
		{"a line without an end", "{\"kernel\":\"softmax\",\"key\":\"" + strings.Repeat("x", maxLine), 0, "", "line 1: longer than 16 MiB"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := Read(strings.NewReader(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one naming %q", err, tc.err)
				}
				return
			}
			if err != nil || len(recs) != tc.n || recs[0].EntryKey() != tc.key {
				t.Fatalf("got %+v, %v; want %d records, first key %s", recs, err, tc.n, tc.key)
			}
		})
	}
}

// Entry lines (where an entry's time went) follow its candidates; Read
// leaves them out, ReadEntries returns them, and one without its time
// object is an error naming its line.
func TestEntries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	recs := []Record{{Device: "d", Kernel: "softmax", DType: "f32", Key: "f32/long", Params: map[string]int{"ROWS": 4},
		MedianUS: 10, Samples: 3, CompileS: 0.25, VerifyS: 0.5, MeasureS: 0.125}}
	tt := &paramfile.TuneTime{WallS: 2, MeasureS: 1, DeviceS: 1.5, IdleS: 0.5, BusyPct: 75}
	if err := Append(path, recs, Entry{Device: "d", Kernel: "softmax", DType: "f32", Key: "f32/long", Time: tt}); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path)
	if err != nil || len(got) != 1 || got[0].CompileS != 0.25 || got[0].VerifyS != 0.5 || got[0].MeasureS != 0.125 {
		t.Fatalf("Read: %+v, %v; want the one candidate with its times", got, err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	es, err := ReadEntries(f)
	if err != nil || len(es) != 1 || es[0].Kind != KindEntry || es[0].Key != "f32/long" || *es[0].Time != *tt {
		t.Fatalf("ReadEntries: %+v, %v", es, err)
	}
	bad := "{\"kernel\":\"softmax\",\"key\":\"f32/long\",\"params\":{}}\n{\"kind\":\"entry\",\"kernel\":\"softmax\",\"key\":\"f32/long\"}"
	if _, err := Read(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("an entry line without time: %v", err)
	}
}

// Lines name their run; in older traces, without one, an entry's records
// up to its entry line are one run, numbered in order per entry.
func TestRuns(t *testing.T) {
	lines := strings.Join([]string{
		`{"device":"d","kernel":"gemv_nt","dtype":"f32","key":"f32/tiny","params":{"BN":4},"median_us":10,"samples":3}`,
		`{"device":"d","kernel":"gemv_nt","dtype":"f32","key":"f32/mid","params":{"BN":4},"median_us":20,"samples":3}`,
		`{"kind":"entry","device":"d","kernel":"gemv_nt","dtype":"f32","key":"f32/tiny","time":{"wall_s":1}}`,
		`{"device":"d","kernel":"gemv_nt","dtype":"f32","key":"tiny","params":{"BN":8},"median_us":9,"samples":3}`,
		`{"kind":"entry","device":"d","kernel":"gemv_nt","dtype":"f32","key":"f32/tiny","time":{"wall_s":2}}`,
		`{"device":"d","kernel":"gemv_nt","dtype":"f32","key":"f32/tiny","params":{"BN":2},"median_us":8,"samples":3,"run":"2026-01-02T03:04:05Z"}`,
		`{"kind":"entry","device":"d","kernel":"gemv_nt","dtype":"f32","key":"f32/tiny","time":{"wall_s":3},"run":"2026-01-02T03:04:05Z"}`,
	}, "\n")
	recs, err := Read(strings.NewReader(lines))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := ReadEntries(strings.NewReader(lines))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.EntryKey()+"@"+r.Run)
	}
	for _, e := range entries {
		got = append(got, "entry "+e.Key+"@"+e.Run)
	}
	want := "f32/tiny@#0 f32/mid@#0 f32/tiny@#1 f32/tiny@2026-01-02T03:04:05Z entry f32/tiny@#0 entry f32/tiny@#1 entry f32/tiny@2026-01-02T03:04:05Z"
	if strings.Join(got, " ") != want {
		t.Errorf("runs:\n  %s\nwant\n  %s", strings.Join(got, " "), want)
	}
}
