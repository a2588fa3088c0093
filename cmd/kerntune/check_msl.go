package main

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/kerntune/kerntune/internal/mslcheck"
	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/spec"
)

// clangError is one error line of clang's output about a .metal file:
// file, line, message.
var clangError = regexp.MustCompile(`(?m)^(?:\[[^\]\n]*\] )?(\S+\.metal):(\d+):\d+: (?:fatal )?error: (.*)$`)

// maxMSLErrors is how many of clang's errors mslError quotes.
const maxMSLErrors = 5

// mslError turns a failed MSL check (err) of spec c's Metal sources into a
// usage error that names the spec and quotes the lines of the user's own
// text (the body in the spec's JSON, a body or source file) that clang
// rejected: the batch's line numbers are those of a deleted temporary
// file, so the first failing candidate is checked again alone and its
// errors mapped back with spec.Locate. A failure without clang errors
// (clang could not run) is returned as it is.
func mslError(c *spec.Compiled, clang string, srcs []gpu.MSLSource, err error) error {
	if len(srcs) == 0 {
		return fmt.Errorf("%s: %w", c.File, err)
	}
	msg := err.Error()
	first := 0
	for i, s := range srcs {
		if strings.Contains(msg, "["+s.Name+"] ") {
			first = i
			break
		}
	}
	s := srcs[first]
	dir, derr := os.MkdirTemp("", "kerntune-msl-")
	if derr != nil {
		return fmt.Errorf("%s: %w", c.File, err)
	}
	defer os.RemoveAll(dir)
	chk, cerr := mslcheck.New(clang, dir)
	if cerr != nil {
		return fmt.Errorf("%s: %w", c.File, err)
	}
	var lines []string
	seen := map[string]bool{}
	for _, mode := range mslcheck.Modes {
		e := chk.CheckText(mode, s.Name, gpu.ForSyntaxCheck(s.Text))
		if e == nil {
			continue
		}
		gen := strings.Split(s.Text, "\n")
		for _, m := range clangError.FindAllStringSubmatch(e.Error(), -1) {
			if !strings.HasPrefix(m[1], dir) || len(lines) >= maxMSLErrors {
				continue
			}
			n, _ := strconv.Atoi(m[2])
			var l string
			if o, ok := c.Locate(s.Text, n); ok {
				l = fmt.Sprintf("  %s: error: %s\n      %s", o, m[3], strings.TrimRight(o.Text, " \t\r"))
			} else if n >= 1 && n <= len(gen) {
				l = fmt.Sprintf("  line %d of the source kerntune generates around the spec's: error: %s\n      %s", n, m[3], strings.TrimRight(gen[n-1], " \t\r"))
			} else {
				l = fmt.Sprintf("  error: %s", m[3])
			}
			if !seen[l] {
				seen[l] = true
				lines = append(lines, l)
			}
		}
		if len(lines) > 0 {
			break
		}
	}
	if len(lines) == 0 {
		return fmt.Errorf("%s: %w", c.File, err)
	}
	return usageError{fmt.Errorf("%s: the Metal source of %s does not compile (clang's MSL check of the first failing candidate):\n%s",
		c.File, s.Name, strings.Join(lines, "\n"))}
}
