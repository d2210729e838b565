package cudatest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"time"
)

// emuFlags are g++'s flags for the emulator's objects; they are part of the
// build cache's key.
var emuFlags = []string{"-std=c++20", "-O1", "-fPIC"}

// emuCacheEnv names the variable that places the emulator's build cache:
// "off" builds in a temporary directory of the test process (removed by
// Main), a path holds the cache there; unset, the cache is
// $XDG_CACHE_HOME/duel/cuda-emu (os.UserCacheDir).
const emuCacheEnv = "DUEL_EMU_CACHE"

// emuCacheKeep is how long an unused entry of the build cache is kept.
const emuCacheKeep = 14 * 24 * time.Hour

// buildKey returns the digest naming the emulator's build: the compiler's
// identity (its resolved path and `--version`), the flags and every input
// file's name and bytes (files: paths below kernelDir). Anything that could
// change an object changes the key, so a cached object is never stale.
func buildKey(gxx, kernelDir string, files []string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "duel cuda-emu build 1\nflags %q\n", emuFlags)
	real, err := filepath.EvalSymlinks(gxx)
	if err != nil {
		return "", fmt.Errorf("cudatest: resolving %s: %w", gxx, err)
	}
	version, err := exec.Command(gxx, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("cudatest: %s --version: %w", gxx, err)
	}
	machine, _ := exec.Command(gxx, "-dumpmachine").Output()
	fmt.Fprintf(h, "compiler %s\n%s\n%s\n", real, version, machine)
	sorted := append([]string(nil), files...)
	sort.Strings(sorted)
	for _, f := range sorted {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("cudatest: reading %s: %w", f, err)
		}
		rel, err := filepath.Rel(kernelDir, f)
		if err != nil {
			rel = f
		}
		fmt.Fprintf(h, "file %s %d\n", rel, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:32], nil
}

// buildDir returns the directory for the build named key and whether it is
// a temporary one (the process's own, to remove at exit). The cache's
// directory is made if needed and marked used; entries unused for
// emuCacheKeep are removed. Without a usable cache it falls back to a
// temporary directory.
func buildDir(key string) (dir string, temp bool, err error) {
	root := os.Getenv(emuCacheEnv)
	if root == "" {
		if base, err := os.UserCacheDir(); err == nil {
			root = filepath.Join(base, "duel", "cuda-emu")
		}
	}
	if root != "" && root != "off" {
		dir = filepath.Join(root, key)
		if err := os.MkdirAll(dir, 0o755); err == nil {
			now := time.Now()
			os.Chtimes(dir, now, now) // marks the entry used (pruning is by this time)
			pruneBuilds(root, key, now)
			return dir, false, nil
		}
	}
	dir, err = os.MkdirTemp("", "duel-cuda-emu")
	if err != nil {
		return "", false, fmt.Errorf("cudatest: a directory for the emulator's build: %w", err)
	}
	return dir, true, nil
}

// pruneBuilds removes the entries of root other than keep that were last
// used more than emuCacheKeep before now. Errors are ignored: pruning is
// housekeeping, and another process may be pruning too.
func pruneBuilds(root, keep string, now time.Time) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || e.Name() == keep {
			continue
		}
		if info, err := e.Info(); err == nil && now.Sub(info.ModTime()) > emuCacheKeep {
			os.RemoveAll(filepath.Join(root, e.Name()))
		}
	}
}

// produce makes dir/name with make unless it exists: make writes the given
// temporary path in dir, which is then renamed to name, so that another
// process sees the file whole or not at all. The caller holds dir's lock.
func produce(dir, name string, make func(tmp string) error) (string, error) {
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	tmp := filepath.Join(dir, name+".tmp"+strconv.Itoa(os.Getpid()))
	if err := make(tmp); err != nil {
		os.Remove(tmp)
		return "", err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("cudatest: %w", err)
	}
	return path, nil
}
