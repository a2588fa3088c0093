package main

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/kerntune/kerntune/internal/compilecache"
)

func init() {
	commands = append(commands, func(f *Factory) *cobra.Command { return NewCmdCache(f, nil) })
}

// CacheOptions are the cache command's arguments and flags.
type CacheOptions struct {
	IO    IOStreams
	Clear bool // "cache clear": remove every entry
	JSON  bool
}

// cacheReport is what cache --json prints.
type cacheReport struct {
	compilecache.Usage
	// Off: KERNTUNE_NO_CACHE turns the cache off for tune, bench and verify.
	Off bool `json:"off"`
	// Removed is how many entries "cache clear" removed.
	Removed int `json:"removed,omitempty"`
}

// NewCmdCache is the cache command: the compile cache's directory, entries
// and size, or "cache clear" to empty it.
func NewCmdCache(f *Factory, runF func(*CacheOptions) error) *cobra.Command {
	opts := &CacheOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "cache [clear]",
		Short: "Show the compile cache's directory, entries and size; clear empties it",
		Long: `The compile cache keeps the kernels tune, bench and verify compile (CUDA
images, OpenCL program binaries), so that a later run on the same device,
driver and compiler compiles none of them again. It lives in
$KERNTUNE_CACHE_DIR, else kerntune/kernels in the user's cache directory
($XDG_CACHE_HOME or ~/.cache, ~/Library/Caches on macOS), private to the
user, and is bounded by $KERNTUNE_CACHE_MAX (default 1GiB), the least
recently used entries going first. --no-cache or KERNTUNE_NO_CACHE=1 turns
it off for a run.`,
		Args:      atMostArgs("clear"),
		ValidArgs: []string{"clear"},
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 1 {
				if args[0] != "clear" {
					return usageErrorf("cache %s: the only action is clear", args[0])
				}
				opts.Clear = true
			}
			if runF != nil {
				return runF(opts)
			}
			return runCache(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func runCache(o *CacheOptions) error {
	dir, err := compilecache.DefaultDir()
	if err != nil {
		return err
	}
	maxBytes, err := compilecache.MaxFromEnv()
	if err != nil {
		return usageError{err}
	}
	rep := cacheReport{Usage: compilecache.Usage{Dir: dir, MaxBytes: maxBytes}, Off: compilecache.Off()}
	// Looking creates nothing: a cache never used has no directory yet.
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return cacheDirError(dir, errors.New("not a directory"))
	} else if err == nil {
		c, err := compilecache.Open(dir, maxBytes)
		if err != nil {
			return err
		}
		if o.Clear {
			if rep.Removed, err = c.Clear(); err != nil {
				return err
			}
		}
		if rep.Usage, err = c.Usage(); err != nil {
			return err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return cacheDirError(dir, err)
	}
	if o.JSON {
		return printJSON(o.IO.Out, rep)
	}
	w := o.IO.Out
	if o.Clear {
		fmt.Fprintf(w, "removed %s\n", plural(rep.Removed, "entry", "entries"))
	}
	fmt.Fprintf(w, "directory  %s\n", rep.Dir)
	fmt.Fprintf(w, "entries    %d\n", rep.Entries)
	fmt.Fprintf(w, "size       %s of %s\n", binarySize(rep.Bytes), binarySize(rep.MaxBytes))
	if rep.Off {
		fmt.Fprintf(w, "off        %s is set: runs neither load nor store\n", compilecache.EnvNoCache)
	}
	return nil
}

// binarySize prints bytes in the binary unit that reads best ("45.6 MiB").
func binarySize(n int64) string {
	x, unit := float64(n), "bytes"
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB"} {
		if x < 1024 {
			break
		}
		x, unit = x/1024, u
	}
	return strconv.FormatFloat(math.Round(x*10)/10, 'f', -1, 64) + " " + unit
}

// noCacheFlag is --no-cache. It sets KERNTUNE_NO_CACHE=1 in this process:
// the backends read it as they open, and the worker processes that run
// them inherit it.
type noCacheFlag struct{ on bool }

func (f *noCacheFlag) String() string { return strconv.FormatBool(f.on) }
func (f *noCacheFlag) Type() string   { return "bool" }

func (f *noCacheFlag) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	f.on = v
	if v {
		return os.Setenv(compilecache.EnvNoCache, "1")
	}
	return nil
}

// addNoCacheFlag gives a command that opens a backend --no-cache.
func addNoCacheFlag(cmd *cobra.Command) {
	cmd.Flags().Var(&noCacheFlag{}, "no-cache",
		"compile every kernel, neither loading from nor storing in the compile cache (as KERNTUNE_NO_CACHE=1; see kerntune cache)")
	cmd.Flags().Lookup("no-cache").NoOptDefVal = "true"
}

// cacheDirError names KERNTUNE_CACHE_DIR when the directory came from it
// (the user's input: exit 2).
func cacheDirError(dir string, err error) error {
	if os.Getenv(compilecache.EnvDir) != "" {
		return usageErrorCause(err, "%s=%s: %v; it must name a directory, or a path where one can be made", compilecache.EnvDir, dir, err)
	}
	return fmt.Errorf("compile cache %s: %w", dir, err)
}
