package main

import (
	"context"
	"fmt"

	"github.com/maskc/maskc/lsp"
)

// runLSP implements `maskc lsp`: a Language Server on stdin/stdout.
// Tile-map pictures for the editor go to --pictures, by default under the
// user cache directory; --no-pictures turns them off.
func runLSP(e *env, args []string) int {
	fs := newFlagSet(e, "lsp", "[--pictures DIR | --no-pictures]")
	pictures := fs.String("pictures", "", "directory for the tile-map pictures of the code lens and hover (default: maskc/pictures under the user cache directory)")
	noPictures := fs.Bool("no-pictures", false, "no tile-map pictures")
	if _, code, ok := parseArgs(fs, args); !ok {
		return code
	}
	opts := lsp.Options{PicturesDir: *pictures}
	switch {
	case *noPictures:
		opts.PicturesDir = ""
	case opts.PicturesDir == "":
		dir, err := lsp.DefaultPicturesDir()
		if err != nil {
			fmt.Fprintf(e.stderr, "maskc lsp: no user cache directory for pictures (%v); pass --pictures DIR or --no-pictures\n", err)
			return exitUsage
		}
		opts.PicturesDir = dir
	}
	if err := lsp.ServeWith(context.Background(), e.stdin, e.stdout, opts); err != nil {
		fmt.Fprintf(e.stderr, "maskc lsp: %v\n", err)
		return exitError
	}
	return exitOK
}
