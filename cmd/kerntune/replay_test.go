package main

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
)

// writeKTCache writes a 5×5 Kernel Tuner cache whose time grows with the
// distance from (3, 1); configurations with x=4 failed to compile.
func writeKTCache(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"tune_params_keys":["x","y"],"tune_params":{"x":[0,1,2,3,4],"y":[0,1,2,3,4]},"cache":{`)
	for x := 0; x < 5; x++ {
		for y := 0; y < 5; y++ {
			if x+y > 0 {
				b.WriteString(",")
			}
			if x == 4 {
				fmt.Fprintf(&b, `"%d,%d":{"x":%d,"y":%d,"time":"CompilationFailedConfig"}`, x, y, x, y)
				continue
			}
			m := 1 + 0.2*float64((x-3)*(x-3)+(y-1)*(y-1))
			fmt.Fprintf(&b, `"%d,%d":{"x":%d,"y":%d,"time":%g,"times":[%g,%g,%g],"compile_time":50}`, x, y, x, y, m, 0.99*m, m, 1.01*m)
		}
	}
	b.WriteString("}}")
	p := testutil.WriteFile(t, t.TempDir(), "synthetic.json", b.String())
	return p
}

// TestReplayJSON checks the --json shape the search issue fixes (cache,
// strategy, runs, and per budget evals, mean_ratio, worst_ratio,
// sim_time_s) and the spread fields added to it.
func TestReplayJSON(t *testing.T) {
	cache := writeKTCache(t)
	code, stdout, stderr := runIn("replay", "--cache", cache, "--strategy", "bo", "--budget-evals", "3,25", "--runs", "4", "--seed", "7", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep struct {
		Cache    string                       `json:"cache"`
		Strategy string                       `json:"strategy"`
		Runs     int                          `json:"runs"`
		Budgets  []map[string]json.RawMessage `json:"budgets"`
	}
	testutil.DecodeJSON(t, stdout, &rep)
	if rep.Cache != cache || rep.Strategy != "bo" || rep.Runs != 4 || len(rep.Budgets) != 2 {
		t.Fatalf("report %+v", rep)
	}
	num := func(b map[string]json.RawMessage, k string) float64 {
		var v float64
		if err := json.Unmarshal(b[k], &v); err != nil {
			t.Fatalf("budget field %q: %v (%s)", k, err, b[k])
		}
		return v
	}
	for i, evals := range []float64{3, 25} {
		b := rep.Budgets[i]
		if num(b, "evals") != evals {
			t.Errorf("budget %d: evals %v, want %v", i, num(b, "evals"), evals)
		}
		mean, worst, med, p10, rate := num(b, "mean_ratio"), num(b, "worst_ratio"), num(b, "median_ratio"), num(b, "p10_ratio"), num(b, "optimum_rate")
		if !(worst > 0 && worst <= p10 && p10 <= med && med <= 1 && worst <= mean && mean <= 1) || rate < 0 || rate > 1 || num(b, "mean_ratio_se") < 0 || num(b, "sim_time_s") <= 0 {
			t.Errorf("budget %d: inconsistent statistics %s", i, stdout)
		}
	}
	// The whole space (25 configurations) as budget: every run finds the optimum.
	if b := rep.Budgets[1]; num(b, "optimum_rate") != 1 || num(b, "worst_ratio") != 1 || num(b, "mean_ratio_se") != 0 {
		t.Errorf("at 25 evaluations: %s", stdout)
	}
}

func TestReplayBadInput(t *testing.T) {
	cache := writeKTCache(t)
	tests := []struct {
		name string
		args []string
		want []string // substrings of stderr
	}{
		{"no cache", []string{"replay", "--strategy", "bo"}, []string{"--cache"}},
		{"missing cache", []string{"replay", "--cache", "nope.json.gz"}, []string{"--cache", "nope.json.gz"}},
		{"unknown strategy", []string{"replay", "--cache", cache, "--strategy", "magic"}, []string{"--strategy", "magic", "bo"}},
		{"zero runs", []string{"replay", "--cache", cache, "--runs", "0"}, []string{"--runs"}},
		{"bad budget", []string{"replay", "--cache", cache, "--budget-evals", "10,x"}, []string{"--budget-evals", "x"}},
		{"default not in the cache", []string{"replay", "--cache", cache, "--default", "x=9,y=9"}, []string{"--default", "x=9,y=9", cache}},
		{"default not a configuration", []string{"replay", "--cache", cache, "--default", "fast"}, []string{"--default", "fast", "first, none"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { wantUsageError(t, tc.args, tc.want) })
	}
}

// TestReplayMarkdownStandardError checks the Markdown row of two caches:
// the mean of their mean ratios and the standard error √(se₁² + se₂²)/2,
// from the same runs as --json.
func TestReplayMarkdownStandardError(t *testing.T) {
	a := writeKTCache(t)
	b := writeKTCache(t)
	args := []string{"replay", "--cache", a + "," + b, "--strategy", "random", "--budget-evals", "4", "--runs", "6", "--seed", "3"}
	code, js, stderr := runIn(append(args, "--json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var reps []struct {
		Budgets []struct {
			MeanRatio   float64 `json:"mean_ratio"`
			MeanRatioSE float64 `json:"mean_ratio_se"`
		} `json:"budgets"`
	}
	if err := json.Unmarshal([]byte(js), &reps); err != nil || len(reps) != 2 {
		t.Fatalf("--json: %v\n%s", err, js)
	}
	r1, r2 := reps[0].Budgets[0], reps[1].Budgets[0]
	wantMean := fmt.Sprintf("%.3f", (r1.MeanRatio+r2.MeanRatio)/2)
	wantSE := fmt.Sprintf("%.3f", math.Sqrt(r1.MeanRatioSE*r1.MeanRatioSE+r2.MeanRatioSE*r2.MeanRatioSE)/2)
	code, md, stderr := runIn(append(args, "--markdown")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(md), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "| strategy | evals | mean ratio | ± s.e. | worst ratio |") {
		t.Fatalf("markdown:\n%s", md)
	}
	cells := strings.Split(strings.Trim(lines[2], "| "), " | ")
	if len(cells) != 8 || cells[0] != "random" || cells[1] != "4" || cells[2] != wantMean || cells[3] != wantSE {
		t.Errorf("row %q: want mean %s, s.e. %s (json %+v %+v)", lines[2], wantMean, wantSE, r1, r2)
	}
	if r1.MeanRatioSE == 0 && r2.MeanRatioSE == 0 {
		t.Errorf("no spread over 6 random runs of 4 evaluations: the check is vacuous (json %s)", js)
	}
}

// --default picks the configuration measured first: with one evaluation
// every run ends there. writeKTCache's times are 1 + 0.2·((x−3)² + (y−1)²),
// so the first values (0, 0) take 3 and the optimum (3, 1) takes 1.
func TestReplayDefault(t *testing.T) {
	cache := writeKTCache(t)
	for _, tc := range []struct {
		flag, key string
		ratio     float64 // 0: not fixed
	}{{"first", "x=0,y=0", 1.0 / 3}, {"x=3,y=1", "x=3,y=1", 1}, {"none", "", 0}} {
		t.Run(tc.flag, func(t *testing.T) {
			code, stdout, stderr := runIn("replay", "--cache", cache, "--strategy", "ils", "--budget-evals", "1", "--runs", "4", "--default", tc.flag, "--json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var rep struct {
				Default string `json:"default"`
				Budgets []struct {
					MeanRatio  float64 `json:"mean_ratio"`
					WorstRatio float64 `json:"worst_ratio"`
				} `json:"budgets"`
			}
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil || len(rep.Budgets) != 1 {
				t.Fatalf("report: %v\n%s", err, stdout)
			}
			if rep.Default != tc.key {
				t.Errorf("default %q, want %q", rep.Default, tc.key)
			}
			if b := rep.Budgets[0]; tc.ratio > 0 && (math.Abs(b.MeanRatio-tc.ratio) > 1e-9 || b.WorstRatio != b.MeanRatio) {
				t.Errorf("one evaluation from %s: mean %v, worst %v; want every run at %v", tc.flag, b.MeanRatio, b.WorstRatio, tc.ratio)
			}
		})
	}
}
