package main

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/kerntune/kerntune/tuner"
)

// budgetHelp documents --budget for tune's help and errors.
const budgetHelp = "wall time for the whole run (e.g. 3m), evaluations per entry (e.g. 200e or 200evals), or both (3m,200e)"

// noWallLimit stands for "no wall-time budget" when only evaluations are given.
const noWallLimit = tuner.NoWallTime

// parseBudget reads --budget: a Go duration, a count of evaluations (distinct
// candidates measured per entry) with the suffix e or evals, or one of each
// separated by a comma. It returns the wall time (noWallLimit when absent)
// and the evaluations (0 when absent).
func parseBudget(s string) (time.Duration, int, error) {
	var wall time.Duration
	evals := 0
	parts := strings.Split(s, ",")
	if strings.TrimSpace(s) == "" || len(parts) > 2 {
		return 0, 0, usageErrorf("--budget %q: want %s", s, budgetHelp)
	}
	for _, p := range parts {
		p = strings.TrimSpace(p)
		num, isEvals := strings.CutSuffix(p, "evals")
		if !isEvals {
			num, isEvals = strings.CutSuffix(p, "e")
		}
		if isEvals {
			n, err := strconv.Atoi(num)
			if err == nil && n > maxCount || errors.Is(err, strconv.ErrRange) {
				return 0, 0, usageErrorf("--budget %q: %q is more evaluations than a run makes; give at most %de per entry", s, p, maxCount)
			}
			if err != nil || n <= 0 || evals != 0 {
				return 0, 0, usageErrorf("--budget %q: %q is not a positive evaluation count given once (want %s)", s, p, budgetHelp)
			}
			if n == 1 {
				return 0, 0, usageErrorf("--budget %q: one evaluation per entry measures only the default, which is no tuning result; give at least 2e", s)
			}
			evals = n
			continue
		}
		d, err := time.ParseDuration(p)
		if err != nil || d <= 0 || wall != 0 {
			return 0, 0, usageErrorf("--budget %q: %q is not a positive duration given once (want %s)", s, p, budgetHelp)
		}
		wall = d
	}
	if wall == 0 {
		wall = noWallLimit
	}
	return wall, evals, nil
}
