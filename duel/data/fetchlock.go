package data

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/duel-ssl/duel/internal/dirlock"
)

// fetchTempPrefix begins the names of Fetch's temporary directories in a
// dataset's directory.
const fetchTempPrefix = ".fetch-"

// lockFetch takes the lock of the fetch of dataset name into root (the
// lock file root/.NAME.fetch.lock), waiting while another process holds
// it, which log is told.
func lockFetch(root, name string, log io.Writer) (release func(), err error) {
	path := filepath.Join(root, "."+name+".fetch.lock")
	release, err = dirlock.TryLockFile(path)
	if errors.Is(err, dirlock.ErrHeld) {
		fmt.Fprintf(log, "%s: waiting for another fetch of it into %s (%v)\n", name, root, err)
		release, err = dirlock.LockFile(path)
	}
	return release, err
}

// removeStaleTemps removes the temporary directories that fetches killed
// before their end left in dest (each holds a downloaded archive or
// unpacked files, 10 to 150 MB). The caller holds the fetch's lock: no
// other fetch is using them.
func removeStaleTemps(dest string) {
	entries, err := os.ReadDir(dest)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), fetchTempPrefix) {
			os.RemoveAll(filepath.Join(dest, e.Name()))
		}
	}
}
