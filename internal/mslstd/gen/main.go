// Command gen writes the files generated from the mslstd table under the
// repository root given as its argument (default: the current directory).
package main

import (
	"fmt"
	"os"

	"github.com/kerntune/kerntune/internal/mslstd"
)

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	if err := mslstd.WriteFiles(root); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
