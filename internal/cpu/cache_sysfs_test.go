package cpu

import (
	"os"
	"testing"
	"testing/fstest"
)

// cacheDir builds a sysfs cache directory from (index, level, type, size)
// rows.
func cacheDir(rows ...[4]string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for _, r := range rows {
		fsys[r[0]+"/level"] = &fstest.MapFile{Data: []byte(r[1] + "\n")}
		fsys[r[0]+"/type"] = &fstest.MapFile{Data: []byte(r[2] + "\n")}
		fsys[r[0]+"/size"] = &fstest.MapFile{Data: []byte(r[3] + "\n")}
	}
	return fsys
}

func TestSysfsCaches(t *testing.T) {
	tests := []struct {
		name       string
		dir        fstest.MapFS
		l1, l2, l3 int
	}{
		{"graviton3", cacheDir(
			[4]string{"index0", "1", "Data", "64K"}, [4]string{"index1", "1", "Instruction", "64K"},
			[4]string{"index2", "2", "Unified", "1024K"}, [4]string{"index3", "3", "Unified", "32768K"}),
			64 << 10, 1 << 20, 32 << 20},
		{"no L3, sizes in M", cacheDir(
			[4]string{"index0", "1", "Data", "32K"}, [4]string{"index2", "2", "Unified", "4M"}),
			32 << 10, 4 << 20, 0},
		{"bad sizes skipped", cacheDir(
			[4]string{"index0", "1", "Data", "lots"}, [4]string{"index1", "2", "Unified", "-4K"},
			[4]string{"index2", "3", "Unified", "0K"}),
			0, 0, 0},
		{"unknown level and type", cacheDir(
			[4]string{"index0", "4", "Unified", "64M"}, [4]string{"index1", "1", "Trace", "16K"}),
			0, 0, 0},
		{"the first listing of a level counts", cacheDir(
			[4]string{"index0", "1", "Data", "48K"}, [4]string{"index1", "1", "Data", "32K"}),
			48 << 10, 0, 0},
		{"empty", fstest.MapFS{}, 0, 0, 0},
		{"missing files", fstest.MapFS{"index0/level": &fstest.MapFile{Data: []byte("1")}}, 0, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l1, l2, l3 := sysfsCaches(tc.dir)
			if l1 != tc.l1 || l2 != tc.l2 || l3 != tc.l3 {
				t.Errorf("got %d, %d, %d; want %d, %d, %d", l1, l2, l3, tc.l1, tc.l2, tc.l3)
			}
		})
	}
	if l1, l2, l3 := sysfsCaches(os.DirFS("/nonexistent/cache")); l1+l2+l3 != 0 {
		t.Errorf("a missing directory gave %d, %d, %d", l1, l2, l3)
	}
}

func TestParseCacheSize(t *testing.T) {
	tests := []struct {
		in   string
		want int
		ok   bool
	}{
		{"48K", 48 << 10, true}, {"2048K", 2 << 20, true}, {"32M", 32 << 20, true}, {"1G", 1 << 30, true},
		{"512", 512, true}, {"", 0, false}, {"K", 0, false}, {"0K", 0, false}, {"-1K", 0, false},
		{"+4K", 0, false}, {"4KB", 0, false}, {"4 K", 0, false}, {"2G", 0, false},
		{"99999999999999999999K", 0, false}, {"1048577K", 0, false},
	}
	for _, tc := range tests {
		if got, ok := parseCacheSize(tc.in); got != tc.want || ok != tc.ok {
			t.Errorf("parseCacheSize(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzParseCacheSize(f *testing.F) {
	for _, s := range []string{"48K", "32M", "1G", "512", "", "-1K", "99999999999999999999K"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := parseCacheSize(s)
		if ok != (n > 0) || n > maxCacheSize {
			t.Fatalf("parseCacheSize(%q) = %d, %v", s, n, ok)
		}
	})
}
