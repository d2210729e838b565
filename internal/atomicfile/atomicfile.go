// Package atomicfile writes files so that readers see either the old file
// or the whole new one, never a partial write: the data goes to a temporary
// file in the destination's directory, which is synced, given mode 0644,
// closed and renamed over the destination.
package atomicfile

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Write creates or replaces path with what write writes to its writer.
// When write or any step fails, the temporary file is removed, path is left
// as it was, and the error names path ("writing PATH: ...") and wraps the
// cause. Once path is replaced, the temporary files of path that a process
// killed while writing left (untouched for staleTemp) are removed.
func Write(path string, write func(w io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), tempPrefix(path)+"*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	err = write(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	removeStaleTemps(path)
	return nil
}

// staleTemp is how long a temporary file stays untouched before it counts
// as a dead writer's: a live one writes to it all the time.
const staleTemp = time.Hour

// tempPrefix is the prefix of path's temporary files.
func tempPrefix(path string) string { return "." + filepath.Base(path) + ".tmp" }

// removeStaleTemps removes path's temporary files untouched for staleTemp.
func removeStaleTemps(path string) {
	dir, prefix := filepath.Dir(path), tempPrefix(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > staleTemp {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// WriteFile creates or replaces path with data, as Write does.
func WriteFile(path string, data []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteJSON creates or replaces path with v as JSON indented by two spaces
// and a final newline, as Write does. An encoding error names path too.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return WriteFile(path, append(b, '\n'))
}
