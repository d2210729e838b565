//go:build unix

package cudatest

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// lockDir takes an exclusive lock on dir (flock on dir/.lock), waiting for
// another process that holds it, and returns its release. Test processes
// of several packages share the emulator's build cache: the lock makes one
// of them compile while the others wait and reuse its objects.
func lockDir(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cudatest: locking the emulator's build: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("cudatest: locking %s: %w", f.Name(), err)
	}
	return func() {
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}, nil
}
