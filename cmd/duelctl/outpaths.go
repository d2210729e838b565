package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// checkOutFile refuses the path of an output file given by flag that
// cannot be written: a directory (it was refused only after the work, as
// "rename ...: file exists"), or a file whose directory does not exist or
// is not a directory.
func checkOutFile(flag, path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return flagError(flag, strconv.Quote(path), "the path of a file to write, not a directory")
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case err != nil:
		return flagError(flag, strconv.Quote(path), fmt.Sprintf("a file in an existing directory (%v)", err))
	case !fi.IsDir():
		return flagError(flag, strconv.Quote(path), fmt.Sprintf("a file in a directory (%s is a file)", dir))
	}
	return nil
}

// checkOutDir refuses the path of an output directory given by flag that
// cannot be made, before any work: an existing file, or a path below a
// file (each was refused only when the results were written, as "mkdir
// ...: not a directory"). A directory that does not exist yet is fine.
func checkOutDir(flag, path string) error {
	for p := filepath.Clean(path); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		switch {
		case err == nil && fi.IsDir():
			return nil
		case err == nil && p == filepath.Clean(path):
			return flagError(flag, strconv.Quote(path), "a directory (it is a file)")
		case err == nil:
			return flagError(flag, strconv.Quote(path), fmt.Sprintf("a directory that can be made (%s is a file)", p))
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR): // ENOTDIR: below a file, found next
			return flagError(flag, strconv.Quote(path), fmt.Sprintf("a directory that can be made (%v)", err))
		}
		if filepath.Dir(p) == p {
			return nil
		}
	}
}
