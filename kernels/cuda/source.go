package cuda

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
)

// includeRE matches a quoted #include line: a header next to the including
// file (common.cuh), which nvcc and the emulator's g++ both look for there.
var includeRE = regexp.MustCompile(`(?m)^[ \t]*#[ \t]*include[ \t]*"([^"]+)"`)

// SourceSHA256 returns the SHA-256 (hex) that stamps the module generated
// from the .cu file src (Module.SHA256): that of src's bytes alone when it
// includes no local header, otherwise of src's bytes followed, for each
// header it includes with #include "name" (recursively, each once, in the
// order first included; resolved next to the including file), by the
// header's name, a NUL, its length, a NUL and its bytes. A change to a
// shared header thus changes the stamp of every file including it.
// go run ./kernels/cuda/gen writes it; TestGeneratedUpToDate checks it.
func SourceSHA256(src string) (string, error) {
	text, err := os.ReadFile(src)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(text)
	seen := map[string]bool{}
	var walk func(dir string, text []byte) error
	walk = func(dir string, text []byte) error {
		for _, m := range includeRE.FindAllSubmatch(text, -1) {
			name := filepath.Join(dir, string(m[1]))
			if seen[name] {
				continue
			}
			seen[name] = true
			b, err := os.ReadFile(name)
			if err != nil {
				return fmt.Errorf("%s: #include %q: %w", src, m[1], err)
			}
			fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(string(m[1])), len(b))
			h.Write(b)
			if err := walk(filepath.Dir(name), b); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(filepath.Dir(src), text); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
