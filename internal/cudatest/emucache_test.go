package cudatest

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// fakeCompiler writes a script answering --version with version, for
// buildKey's compiler identity.
func fakeCompiler(t *testing.T, dir, version string) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("needs a shell script as the compiler")
	}
	path := filepath.Join(dir, "g++")
	script := "#!/bin/sh\necho '" + version + "'\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestBuildKeyNamesEveryInput(t *testing.T) {
	tmp := t.TempDir()
	kdir := filepath.Join(tmp, "kernels")
	if err := os.MkdirAll(filepath.Join(kdir, "emu"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) string {
		p := filepath.Join(kdir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cu := write("a.cu", "kernel a")
	cuh := write("common.cuh", "shared")
	lib := write("emu/lib_a.cpp", `#include "../a.cu"`)
	gxx := fakeCompiler(t, tmp, "g++ 12.2.0")
	key := func(t *testing.T, files ...string) string {
		t.Helper()
		k, err := buildKey(gxx, kdir, files)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	base := key(t, cu, cuh, lib)
	if got := key(t, lib, cuh, cu); got != base {
		t.Errorf("the files' order changed the key: %s, want %s", got, base)
	}
	// Each change is made to the state the previous ones left, and compared
	// with the key just before it.
	files := []string{cu, cuh, lib}
	for _, tc := range []struct {
		name   string
		change func(t *testing.T) []string
	}{
		{"a header's bytes", func(t *testing.T) []string { write("common.cuh", "shared2"); return files }},
		{"a file added", func(t *testing.T) []string { return append(files, write("b.cuh", "")) }},
		{"a file renamed", func(t *testing.T) []string {
			moved := filepath.Join(kdir, "other.cuh")
			if err := os.Rename(cuh, moved); err != nil {
				t.Fatal(err)
			}
			renamed := append([]string(nil), files...)
			renamed[1] = moved // the same bytes under another name
			return renamed
		}},
		{"the compiler's version", func(t *testing.T) []string {
			os.Remove(gxx)
			fakeCompiler(t, tmp, "g++ 13.1.0")
			return files
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := key(t, files...)
			files = tc.change(t)
			if got := key(t, files...); got == before {
				t.Errorf("key unchanged (%s)", got)
			}
		})
	}
	if _, err := buildKey(gxx, kdir, []string{filepath.Join(kdir, "missing.cu")}); err == nil {
		t.Error("buildKey of a missing file: no error")
	}
}

func TestProduceMakesOnceAndWhole(t *testing.T) {
	dir := t.TempDir()
	calls := 0
	make := func(tmp string) error {
		calls++
		return os.WriteFile(tmp, []byte("object"), 0o644)
	}
	for range 2 {
		path, err := produce(dir, "a.o", make)
		if err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(path); err != nil || string(b) != "object" {
			t.Fatalf("%s holds %q (%v), want \"object\"", path, b, err)
		}
	}
	if calls != 1 {
		t.Errorf("make called %d times, want once", calls)
	}
	failed := func(tmp string) error {
		os.WriteFile(tmp, []byte("half"), 0o644)
		return errors.New("compiler failed")
	}
	if _, err := produce(dir, "b.o", failed); err == nil {
		t.Fatal("a failed make: no error")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("after a failed make the directory holds %d files, want only a.o", len(entries))
	}
}

func TestPruneBuildsRemovesOnlyOldEntries(t *testing.T) {
	root := t.TempDir()
	now := time.Now()
	for _, e := range []struct {
		name string
		age  time.Duration
	}{{"current", 30 * 24 * time.Hour}, {"recent", time.Hour}, {"old", emuCacheKeep + time.Hour}} {
		dir := filepath.Join(root, e.name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "lib.o"), nil, 0o644)
		if err := os.Chtimes(dir, now.Add(-e.age), now.Add(-e.age)); err != nil {
			t.Fatal(err)
		}
	}
	pruneBuilds(root, "current", now)
	for name, want := range map[string]bool{"current": true, "recent": true, "old": false} {
		if _, err := os.Stat(filepath.Join(root, name)); (err == nil) != want {
			t.Errorf("entry %s kept = %v, want %v", name, err == nil, want)
		}
	}
}

func TestBuildDirFollowsTheEnvironment(t *testing.T) {
	root := t.TempDir()
	for _, tc := range []struct {
		env      string
		wantTemp bool
		wantDir  string
	}{
		{"off", true, ""},
		{root, false, filepath.Join(root, "k1")},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv(emuCacheEnv, tc.env)
			dir, temp, err := buildDir("k1")
			if err != nil {
				t.Fatal(err)
			}
			if temp {
				defer os.RemoveAll(dir)
			}
			if temp != tc.wantTemp || (tc.wantDir != "" && dir != tc.wantDir) {
				t.Errorf("buildDir = %s (temporary %v), want %q (temporary %v)", dir, temp, tc.wantDir, tc.wantTemp)
			}
			if info, err := os.Stat(dir); err != nil || !info.IsDir() {
				t.Errorf("%s is not a directory: %v", dir, err)
			}
		})
	}
}
