package paramfile

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/params/families"
)

// MergeIntoFileKeep hands keep the entry the file holds at the time of the
// write, and writes what keep returns; entries only one side has are not
// asked about.
func TestMergeIntoFileKeep(t *testing.T) {
	upd := typicalUpdate()
	dev := upd.Devices["cpu:test-2c"]
	dev.Kernels[families.GemvNT]["f32/tiny"] = &Entry{Params: map[string]int{"BN": 8}, MedianUS: 99, Shapes: [][]int{{1, 896, 896}}}
	dev.Kernels[families.GemvNT]["f32/1x64x64"] = &Entry{Params: map[string]int{"BN": 4}, MedianUS: 1, Shapes: [][]int{{1, 64, 64}}}
	delete(dev.Kernels, families.Softmax)
	delete(dev.Kernels[families.GemvNT], "f32/1x896x4864")

	for _, tt := range []struct {
		name    string
		keepOld bool
		wantBN  int
	}{
		{"keep the file's entry", true, 64},
		{"take the new entry", false, 8},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), DefaultFileName)
			if err := MergeIntoFile(path, typicalUpdate(), false); err != nil {
				t.Fatal(err)
			}
			var asked []string
			err := MergeIntoFileKeep(path, upd, false, func(device, family, key string, old, nw any) any {
				asked = append(asked, device+" "+family+" "+key)
				bn, _ := old.(map[string]any)["params"].(map[string]any)["BN"].(json.Number).Int64()
				if bn != 64 {
					t.Errorf("keep got the file's entry with BN %d, want the file's 64", bn)
				}
				if tt.keepOld {
					return old
				}
				return nw
			})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(asked, ";") != "cpu:test-2c gemv_nt f32/tiny" {
				t.Errorf("keep asked about %q, want only the entry both hold", asked)
			}
			f, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			es := f.Devices["cpu:test-2c"].Kernels[families.GemvNT]
			if got := es["f32/tiny"].Params["BN"]; got != tt.wantBN {
				t.Errorf("f32/tiny BN %d, want %d", got, tt.wantBN)
			}
			if es["f32/1x64x64"] == nil || es["f32/1x896x4864"] == nil || f.Devices["cpu:test-2c"].Kernels[families.Softmax]["f32/xlong"] == nil {
				t.Errorf("entries only one side held were lost: %v", es)
			}
		})
	}
}

// use is optional; when present it is "baseline" or "tuned", for Parse and
// for the schema alike.
func TestParseUse(t *testing.T) {
	sch := testutil.SchemaFile(t, "../schema.json")
	for _, tt := range []struct {
		entry string
		want  string // "" with ok: absent
		ok    bool
	}{
		{`{"params":{"BN":8}}`, "", true},
		{`{"params":{"BN":8},"use":"baseline"}`, "baseline", true},
		{`{"params":{"BN":8},"use":"tuned"}`, "tuned", true},
		{`{"params":{"BN":8},"use":"vendor"}`, "", false},
		{`{"params":{"BN":8},"use":true}`, "", false},
	} {
		t.Run(tt.entry, func(t *testing.T) {
			data := []byte(fileWith("cpu", "gemv_nt", "f32/tiny", tt.entry))
			f, err := Parse(data)
			if (err == nil) != tt.ok {
				t.Fatalf("Parse error %v, want ok=%v", err, tt.ok)
			}
			if err != nil {
				if !strings.Contains(err.Error(), `["f32/tiny"].use`) {
					t.Errorf("error %q does not name the field", err)
				}
			} else if got := f.Devices["cpu:x"].Kernels["gemv_nt"]["f32/tiny"].Use; got != tt.want {
				t.Errorf("use %q, want %q", got, tt.want)
			}
			if serr := testutil.Validate(sch, data); (serr == nil) != tt.ok {
				t.Errorf("schema: %v, want ok=%v", serr, tt.ok)
			}
		})
	}
}

// When keep keeps the file's entry for every entry of the update, the
// file is not rewritten: its bytes (tuned_at, facts) and its modification
// time stay. An update of which one entry is taken is written whole.
func TestMergeIntoFileKeepAllKeptLeavesFile(t *testing.T) {
	for _, tt := range []struct {
		name    string
		takeNew map[string]bool // keys whose new entry keep takes
		same    bool
	}{
		{"every entry kept", nil, true},
		{"one entry taken", map[string]bool{"f32/tiny": true}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), DefaultFileName)
			if err := MergeIntoFile(path, typicalUpdate(), false); err != nil {
				t.Fatal(err)
			}
			past := time.Now().Add(-time.Hour).Truncate(time.Second)
			if err := os.Chtimes(path, past, past); err != nil {
				t.Fatal(err)
			}
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			upd := typicalUpdate()
			dev := upd.Devices["cpu:test-2c"]
			dev.TunedAt, dev.Facts = "2030-01-01T00:00:00Z", map[string]float64{"bandwidth_gbps": 99}
			dev.Kernels[families.GemvNT]["f32/tiny"].MedianUS = 50
			err = MergeIntoFileKeep(path, upd, false, func(_, _, key string, old, nw any) any {
				if tt.takeNew[key] {
					return nw
				}
				return old
			})
			if err != nil {
				t.Fatal(err)
			}
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if same := bytes.Equal(before, after) && st.ModTime().Equal(past); same != tt.same {
				t.Errorf("file unchanged: %v, want %v (mtime %s, was %s)", same, tt.same, st.ModTime(), past)
			}
		})
	}
}

// MergeEntry adds an entry the file lacks, and weighs one it holds by
// ChooseEntry: the file keeps the faster recorded entry and says why.
func TestMergeEntry(t *testing.T) {
	one := func(us float64, bn int) *File {
		return &File{SchemaVersion: SchemaVersion, Devices: map[string]*Device{"cpu:x": {Backend: "cpu", Name: "X", Family: "amd64",
			Kernels: map[string]map[string]*Entry{families.GemvNT: {"f32/tiny": {Params: map[string]int{"BN": bn}, MedianUS: us, Shapes: [][]int{{1, 64, 64}}}}}}}}
	}
	path := filepath.Join(t.TempDir(), "p.json")
	read := func() *Entry {
		f, err := ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return f.Devices["cpu:x"].Kernels[families.GemvNT]["f32/tiny"]
	}
	for _, c := range []struct {
		name    string
		us      float64
		bn      int
		old     bool // the file held an entry
		keepNew bool
		wantBN  int
	}{
		{"added", 10, 8, false, false, 8},
		{"slower: kept", 12, 16, true, false, 8},
		{"faster: replaced", 9, 32, true, true, 32},
	} {
		k, err := MergeEntry(path, one(c.us, c.bn), false, Evidence{Recorded: true})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if (k.Old != nil) != c.old || k.Choice.KeepNew != c.keepNew || k.Unreadable != nil {
			t.Errorf("%s: %+v", c.name, k)
		}
		if c.old && k.Choice.Reason == "" {
			t.Errorf("%s: no reason given", c.name)
		}
		if got := read().Params["BN"]; got != c.wantBN {
			t.Errorf("%s: the file holds BN=%d, want %d", c.name, got, c.wantBN)
		}
	}
}
