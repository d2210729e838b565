//go:build !unix && !windows

package dirlock

import "os"

// tryLockFile does not lock where the system offers no file locks: two
// processes are not kept apart there.
func tryLockFile(*os.File) (held bool, err error) { return false, nil }

// unlockFile does nothing.
func unlockFile(*os.File) {}
