//go:build !unix && !windows

package dirlock

import "os"

// lockFile does not lock where the system offers no file locks: two
// processes are not kept apart there.
func lockFile(*os.File, bool) (held bool, err error) { return false, nil }

// unlockFile does nothing.
func unlockFile(*os.File) {}
