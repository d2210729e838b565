//go:build unix

package dirlock

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive flock on f, waiting for it with wait, else
// reporting held when another process has it. On a file system without
// locks (some network file systems: ENOLCK, EOPNOTSUPP) it takes none and
// reports no error: the processes are not kept apart there, as on a
// system without file locks.
func lockFile(f *os.File, wait bool) (held bool, err error) {
	how := unix.LOCK_EX
	if !wait {
		how |= unix.LOCK_NB
	}
	for {
		err = unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	switch {
	case errors.Is(err, unix.EWOULDBLOCK):
		return true, nil
	case errors.Is(err, unix.ENOLCK), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOTSUP):
		return false, nil
	}
	return false, err
}

// unlockFile releases f's lock.
func unlockFile(f *os.File) { unix.Flock(int(f.Fd()), unix.LOCK_UN) }
