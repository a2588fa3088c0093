package mslcheck

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
)

// FindXcrun returns xcrun where Apple's Metal compiler answers through it
// (xcrun -sdk macosx --find metal succeeds): on macOS with Xcode or its
// command line tools, or wherever an xcrun is on PATH; "" otherwise.
func FindXcrun() string {
	p, err := exec.LookPath("xcrun")
	if err != nil {
		if runtime.GOOS != "darwin" {
			return ""
		}
		if p, err = exec.LookPath("/usr/bin/xcrun"); err != nil {
			return ""
		}
	}
	if err := exec.Command(p, "-sdk", "macosx", "--find", "metal").Run(); err != nil {
		return ""
	}
	return p
}

// Apple checks MSL with Apple's Metal compiler (xcrun -sdk macosx metal):
// what it accepts, Metal accepts, so no stand-in and no Lint are needed.
type Apple struct {
	xcrun   string
	dir     string
	version string
	files   atomic.Int64
}

// NewApple returns a checker that compiles in dir with xcrun's metal for
// a Metal language version ("3.2": -std=metal3.2).
func NewApple(xcrun, dir, version string) (*Apple, error) {
	if _, err := VersionMacro(version); err != nil {
		return nil, err
	}
	return &Apple{xcrun: xcrun, dir: dir, version: version}, nil
}

// Version is the Metal language version the checker compiles for.
func (a *Apple) Version() string { return a.version }

// Args are xcrun's arguments for compiling file (to nothing).
func (a *Apple) Args(file string) []string {
	return []string{"-sdk", "macosx", "metal", "-std=metal" + a.version, "-c", file, "-o", os.DevNull}
}

// Check compiles srcs as one translation unit, batched as the clang check
// batches them (each in its own namespace, its kernel renamed).
func (a *Apple) Check(ctx context.Context, srcs []Source) error {
	text, spans, err := batch(srcs)
	if err != nil {
		return err
	}
	path := filepath.Join(a.dir, fmt.Sprintf("apple%d.metal", a.files.Add(1)))
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return fmt.Errorf("MSL check: %w", err)
	}
	out, err := exec.CommandContext(ctx, a.xcrun, a.Args(path)...).CombinedOutput()
	if err != nil {
		name := fmt.Sprintf("%d candidates", len(srcs))
		if len(srcs) > 0 {
			name += " from " + srcs[0].Name
		}
		return fmt.Errorf("Apple's Metal compiler (%s %s) on %s: %w\n%s", a.xcrun, strings.Join(a.Args(path), " "), name, err, annotate(out, path, spans))
	}
	return nil
}

// CheckText compiles one translation unit as it is.
func (a *Apple) CheckText(ctx context.Context, name, text string) error {
	path := filepath.Join(a.dir, fmt.Sprintf("apple%d.metal", a.files.Add(1)))
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if out, err := exec.CommandContext(ctx, a.xcrun, a.Args(path)...).CombinedOutput(); err != nil {
		return fmt.Errorf("Apple's Metal compiler on %s (%s): %w\n%s", name, path, err, out)
	}
	return nil
}
