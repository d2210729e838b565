// Package dirlock keeps two processes from writing one directory at once:
// an exclusive, non-blocking lock on a file in it (DIR/.lock), which the
// system releases when the holder exits, however it exits (a kill -9
// leaves nothing to clean up). duelctl train holds its run directory's
// while it trains.
package dirlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// File is the name of the lock file in a locked directory.
const File = ".lock"

// ErrHeld is returned (wrapped) by TryLock when another process holds the
// directory's lock.
var ErrHeld = errors.New("locked")

// TryLock takes the lock of dir, which must exist, without waiting, and
// returns its release. When another process holds it the error wraps
// ErrHeld and names that process's id when the lock file records it.
func TryLock(dir string) (release func(), err error) {
	path := filepath.Join(dir, File)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", dir, err)
	}
	held, err := tryLockFile(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	if held {
		holder := "another process"
		if b, err := os.ReadFile(path); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				holder = fmt.Sprintf("process %d", pid)
			}
		}
		f.Close()
		return nil, fmt.Errorf("%s: %w by %s", path, ErrHeld, holder)
	}
	// Who holds it, for the error of the next one to try.
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() {
		f.Truncate(0)
		unlockFile(f)
		f.Close()
	}, nil
}
