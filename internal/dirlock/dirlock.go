// Package dirlock keeps two processes from writing the same files at
// once: an exclusive lock on a lock file (DIR/.lock for a directory), which
// the system releases when the holder exits, however it exits (a kill -9
// leaves nothing to clean up). duelctl train holds its run directory's
// while it trains; duelctl analyze, data fetch and the wisdom file's
// writers hold their own.
package dirlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// File is the name of the lock file of a locked directory (TryLock).
const File = ".lock"

// ErrHeld is returned (wrapped) by TryLock and TryLockFile when another
// process holds the lock.
var ErrHeld = errors.New("locked")

// TryLock takes the lock of dir, which must exist, without waiting (the
// lock file dir/.lock), and returns its release. When another process
// holds it the error wraps ErrHeld and names that process's id when the
// lock file records it.
func TryLock(dir string) (release func(), err error) {
	return TryLockFile(filepath.Join(dir, File))
}

// TryLockFile takes the lock of the lock file path (created if missing, in
// a directory that must exist) without waiting, as TryLock does.
func TryLockFile(path string) (release func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", filepath.Dir(path), err)
	}
	held, err := lockFile(f, false)
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
	return holdAndRelease(f), nil
}

// LockFile takes the lock of the lock file path (created if missing, in a
// directory that must exist), waiting while another process holds it, and
// returns its release: for short read-modify-write sections.
func LockFile(path string) (release func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", filepath.Dir(path), err)
	}
	if _, err := lockFile(f, true); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return holdAndRelease(f), nil
}

// holdAndRelease records this process as the holder of f's lock, for the
// error of the next one to try, and returns the lock's release.
func holdAndRelease(f *os.File) func() {
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() {
		f.Truncate(0)
		unlockFile(f)
		f.Close()
	}
}
