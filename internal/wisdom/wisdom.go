// Package wisdom keeps what duel measured about a machine, as FFTW's wisdom
// does: a kernel family that can tune itself (SGEMM's micro-kernel and
// blocking, say) stores the winner here, keyed by the CPU (internal/cpu's
// Key: vendor, family, model, stepping, brand), and later processes on the
// same CPU read it instead of measuring again.
//
// The file is JSON, versioned, one object per CPU with one entry per kernel
// family, each family free to store what it likes under its own name
// ("gemm.sgemm", "nn.conv", ...):
//
//	{
//	  "format": "duel-wisdom",
//	  "version": 1,
//	  "cpus": {
//	    "AuthenticAMD-26-2-1-AMD_EPYC": {
//	      "gemm.sgemm": {"kernel": "avx512", "mc": 140, "kc": 432, ...}
//	    }
//	  }
//	}
//
// It lives in os.UserCacheDir()/duel/wisdom.json. The environment variable
// DUEL_WISDOM changes that: "off" (or "0", "none") disables reading and
// writing, any other value is the path of the file to use. Writes replace
// the file atomically (internal/atomicfile) and keep the entries of other
// CPUs and other families. A file that cannot be parsed, or one of another
// format or version, is reported as an error naming the file; callers warn
// in one line and use their untuned defaults.
package wisdom

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/duel-ssl/duel/internal/atomicfile"
	"github.com/duel-ssl/duel/internal/dirlock"
)

// Format is the value of the file's "format" field.
const Format = "duel-wisdom"

// Version is the layout version this package reads and writes.
const Version = 1

// Env names the environment variable that disables or moves the file.
const Env = "DUEL_WISDOM"

// maxSize bounds the file read: wisdom is a few kilobytes; anything larger
// is not ours.
const maxSize = 1 << 20

// File is the content of a wisdom file: per CPU key, per entry name, the
// entry as raw JSON (each kernel family decodes its own).
type File struct {
	Format  string                                `json:"format"`
	Version int                                   `json:"version"`
	CPUs    map[string]map[string]json.RawMessage `json:"cpus"`
}

// New returns an empty file of the current format and version.
func New() *File {
	return &File{Format: Format, Version: Version, CPUs: map[string]map[string]json.RawMessage{}}
}

// Path returns the wisdom file to use and whether wisdom is enabled: the
// value of DUEL_WISDOM when it names a path, nothing when it is "off", "0"
// or "none", else wisdom.json in the duel folder of the user's cache
// directory (disabled when the system has none).
func Path() (string, bool) {
	return pathFrom(os.Getenv(Env), os.UserCacheDir)
}

// pathFrom is Path with the variable's value and the cache directory
// lookup given.
func pathFrom(env string, cacheDir func() (string, error)) (string, bool) {
	switch v := strings.TrimSpace(env); strings.ToLower(v) {
	case "off", "0", "none", "false":
		return "", false
	case "":
		dir, err := cacheDir()
		if err != nil || dir == "" {
			return "", false
		}
		return filepath.Join(dir, "duel", "wisdom.json"), true
	default:
		return v, true
	}
}

// Parse decodes the content of a wisdom file. It fails on anything but a
// JSON object of this format and version, with CPU keys and entry names
// that are not empty and entries that are JSON objects.
func Parse(data []byte) (*File, error) {
	var f File
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("not a wisdom file: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("not a wisdom file: data after the JSON object")
	}
	if f.Format != Format {
		return nil, fmt.Errorf("not a wisdom file: format %q, want %q", f.Format, Format)
	}
	if f.Version != Version {
		return nil, fmt.Errorf("wisdom version %d, this duel reads version %d", f.Version, Version)
	}
	if f.CPUs == nil {
		f.CPUs = map[string]map[string]json.RawMessage{}
	}
	for key, entries := range f.CPUs {
		if key == "" {
			return nil, errors.New("empty CPU key")
		}
		for name, raw := range entries {
			if name == "" {
				return nil, fmt.Errorf("CPU %s: empty entry name", key)
			}
			if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
				return nil, fmt.Errorf("CPU %s: entry %s is not a JSON object", key, name)
			}
		}
	}
	return &f, nil
}

// Read reads and parses the file at path. A file that does not exist gives
// an empty File and no error; any other failure is an error that names the
// file.
func Read(path string) (*File, error) {
	fh, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return New(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("wisdom file %s: %w", path, err)
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, maxSize+1))
	if err != nil {
		return nil, fmt.Errorf("wisdom file %s: %w", path, err)
	}
	if len(data) > maxSize {
		return nil, fmt.Errorf("wisdom file %s: larger than %d bytes", path, maxSize)
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("wisdom file %s: %w", path, err)
	}
	return f, nil
}

// Lookup decodes the entry name of CPU key into v. It reports false, and
// leaves v alone, when there is no such entry; a malformed entry is an
// error.
func (f *File) Lookup(key, name string, v any) (bool, error) {
	raw, ok := f.CPUs[key][name]
	if !ok {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return false, fmt.Errorf("CPU %s: entry %s: %w", key, name, err)
	}
	return true, nil
}

// Set stores v, encoded as a JSON object, as the entry name of CPU key,
// replacing any previous one.
func (f *File) Set(key, name string, v any) error {
	if key == "" || name == "" {
		return errors.New("wisdom: empty CPU key or entry name")
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("wisdom: entry %s: %w", name, err)
	}
	if len(raw) == 0 || raw[0] != '{' {
		return fmt.Errorf("wisdom: entry %s: not a JSON object", name)
	}
	if f.CPUs == nil {
		f.CPUs = map[string]map[string]json.RawMessage{}
	}
	if f.CPUs[key] == nil {
		f.CPUs[key] = map[string]json.RawMessage{}
	}
	f.CPUs[key][name] = raw
	return nil
}

// Write replaces the file at path with f, atomically, creating its folder
// if needed.
func Write(path string, f *File) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("wisdom file %s: %w", path, err)
	}
	return atomicfile.WriteJSON(path, f)
}

// Load reads the entry name of CPU key from the wisdom file in use (Path)
// into v. It reports whether the entry was found and the file's path
// (empty when wisdom is disabled). An unreadable, corrupt or foreign file,
// or a malformed entry, is an error naming the file: the caller warns and
// keeps its defaults.
func Load(key, name string, v any) (found bool, path string, err error) {
	path, ok := Path()
	if !ok {
		return false, "", nil
	}
	f, err := Read(path)
	if err != nil {
		return false, path, err
	}
	found, err = f.Lookup(key, name, v)
	if err != nil {
		return false, path, fmt.Errorf("wisdom file %s: %w", path, err)
	}
	return found, path, nil
}

// Store sets the entry name of CPU key to v in the wisdom file in use,
// keeping its other entries, and returns the file's path. A corrupt or
// foreign file is replaced by a new one holding only this entry; the
// error it gave is returned as replaced, for the caller to report. With
// wisdom disabled Store writes nothing and returns an empty path.
//
// The read, change and write hold the lock file path + ".lock", so that
// two processes storing at once (duelctl bench tune beside bench step
// --tune-conv) both keep their entries.
func Store(key, name string, v any) (path string, replaced, err error) {
	path, ok := Path()
	if !ok {
		return "", nil, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return path, nil, fmt.Errorf("wisdom file %s: %w", path, err)
	}
	release, err := dirlock.LockFile(path + ".lock")
	if err != nil {
		return path, nil, fmt.Errorf("wisdom file %s: %w", path, err)
	}
	defer release()
	f, rerr := Read(path)
	if rerr != nil {
		if errors.Is(rerr, fs.ErrPermission) {
			return path, nil, rerr
		}
		f, replaced = New(), rerr
	}
	if err := f.Set(key, name, v); err != nil {
		return path, replaced, err
	}
	return path, replaced, Write(path, f)
}
