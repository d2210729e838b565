package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/duel-ssl/duel/internal/dirlock"
)

// checkOutFile refuses the path of an output file given by flag that
// cannot be written: a directory (else refused only after the work, as
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
// file (else each is refused only when the results are written, as "mkdir
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

// analyzeLock is the lock file duelctl analyze holds in the directory it
// writes (a run directory's own .lock is training's: an analysis may run
// while the run trains).
const analyzeLock = ".analyze.lock"

// lockOutputs makes dir and takes the lock file lock in it for command,
// refusing when another process holds it: two of them would delete each
// other's plots and leave a report naming missing files.
func lockOutputs(dir, lock, command string) (release func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	release, err = dirlock.TryLockFile(filepath.Join(dir, lock))
	if errors.Is(err, dirlock.ErrHeld) {
		return nil, fmt.Errorf("another duelctl %s is writing into %s (%w): wait for it to end", command, dir, err)
	}
	return release, err
}

// removeDescriptors removes from dir the files that describe the outputs
// (report.md, a JSON summary), which are written last: a call killed
// while writing then leaves its new outputs without an old description of
// other ones.
func removeDescriptors(dir string, descriptors ...string) error {
	for _, d := range descriptors {
		if err := os.Remove(filepath.Join(dir, d)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing %s before writing what it describes: %w", filepath.Join(dir, d), err)
		}
	}
	return nil
}
