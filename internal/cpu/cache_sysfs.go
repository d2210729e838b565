package cpu

import (
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// sysfsCaches returns the sizes in bytes of the level-1 data, level-2 and
// level-3 caches that Linux describes in dir (a cpu's cache directory:
// index0, index1, ... each with level, type and size files), 0 for each
// it does not describe or describes in a form not understood. An
// instruction cache is skipped; where a level is listed twice, the first
// listing counts.
func sysfsCaches(dir fs.FS) (l1d, l2, l3 int) {
	entries, err := fs.ReadDir(dir, ".")
	if err != nil {
		return 0, 0, 0
	}
	read := func(name, file string) string {
		b, err := fs.ReadFile(dir, path.Join(name, file))
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "index") {
			continue
		}
		typ := read(e.Name(), "type")
		if typ != "Data" && typ != "Unified" {
			continue
		}
		size, ok := parseCacheSize(read(e.Name(), "size"))
		if !ok {
			continue
		}
		var dst *int
		switch read(e.Name(), "level") {
		case "1":
			dst = &l1d
		case "2":
			dst = &l2
		case "3":
			dst = &l3
		default:
			continue
		}
		if *dst == 0 {
			*dst = size
		}
	}
	return l1d, l2, l3
}

// maxCacheSize bounds the sizes parseCacheSize accepts (1 GiB): a larger
// figure is a misreading, not a cache.
const maxCacheSize = 1 << 30

// parseCacheSize reads a sysfs cache size: a decimal number of bytes
// followed by K, M or G (binary multiples) or nothing, e.g. "48K",
// "2048K", "32M". It reports false for anything else, zero, or more than
// maxCacheSize.
func parseCacheSize(s string) (int, bool) {
	mult := 1
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, strings.TrimSuffix(s, "G")
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n > maxCacheSize/mult || strings.HasPrefix(s, "+") {
		return 0, false
	}
	return n * mult, true
}
