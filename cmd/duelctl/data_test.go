package main

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func runCLI(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(append([]string{"duelctl"}, args...), &o, &e)
	return code, o.String(), e.String()
}

func TestDataInfoDefault(t *testing.T) {
	code, out, errOut := runCLI("data", "info", "default", "--split", "test", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var v struct {
		N           int   `json:"n"`
		ClassCounts []int `json:"class_counts"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &v); err != nil {
		t.Fatalf("last line is not JSON: %v", err)
	}
	if v.N != 1000 || len(v.ClassCounts) != 10 {
		t.Fatalf("info: %+v", v)
	}
}

func TestDataBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"data", "fetch"}, "expected one dataset name"},
		{[]string{"data", "fetch", "imagenet"}, `dataset "imagenet"`},
		{[]string{"data", "fetch", "mnist", "--bogus"}, "--bogus: unknown flag for duelctl data fetch"},
		{[]string{"data", "fetch", "mnist", "--data"}, "--data: missing value"},
		{[]string{"data", "fetch", "cifar10", "--data", "DIR", "--from", "/nonexistent.tgz"}, "/nonexistent.tgz"},
		{[]string{"data", "info", "cifar10", "--data", "/nonexistent"}, "no CIFAR-10 files"},
		{[]string{"data", "info", "default", "--split", "val"}, "--split"},
		{[]string{"data", "info", "default", "--data", "/some/cifar10"}, `--data: got "/some/cifar10", expected nothing with dataset default`}, // was ignored
		{[]string{"bench", "data", "--batch", "0"}, "--batch"},
		{[]string{"bench", "data", "--preset", "x"}, "--preset"},
	} {
		if len(c.args) > 4 && c.args[4] == "DIR" {
			c.args[4] = t.TempDir()
		}
		code, _, errOut := runCLI(c.args...)
		if code == 0 || !strings.HasPrefix(errOut, "duelctl: ") || !strings.Contains(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q, want one line mentioning %q", c.args, code, errOut, c.want)
		}
	}
}

// TestDataInfoFolderClasses checks that data info shows one class list for
// both splits of an image folder: with train/{a,b} and test/{b}, the test
// split's images of b carry b's train index.
func TestDataInfoFolderClasses(t *testing.T) {
	dir := t.TempDir()
	img := image.NewGray(image.Rect(0, 0, 4, 4))
	var png1 bytes.Buffer
	if err := png.Encode(&png1, img); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"train/a/1.png", "train/a/2.png", "train/b/3.png", "test/b/4.png", "test/b/5.png"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, png1.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		split   string
		classes []string
		counts  []int
		line    string // the class line of b in the text output
	}{
		{"train", []string{"a", "b"}, []int{2, 1}, "   1 b              1"},
		{"test", []string{"a", "b"}, []int{0, 2}, "   1 b              2"},
	} {
		code, out, errOut := runCLI("data", "info", "folder", "--data", dir, "--split", c.split, "--json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.split, code, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var v struct {
			Classes     []string `json:"classes"`
			ClassCounts []int    `json:"class_counts"`
		}
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &v); err != nil {
			t.Fatalf("%s: last line is not JSON: %v", c.split, err)
		}
		if !slices.Equal(v.Classes, c.classes) || !slices.Equal(v.ClassCounts, c.counts) || !strings.Contains(out, c.line+"\n") {
			t.Fatalf("%s: classes %v counts %v, want %v %v; output:\n%s", c.split, v.Classes, v.ClassCounts, c.classes, c.counts, out)
		}
	}
}

// TestDataFolderAndFetchErrors checks that bad folder layouts and failed
// fetches give one line naming the flag or folder, what was found and what
// was expected, and that a failed fetch leaves no directory behind.
func TestDataFolderAndFetchErrors(t *testing.T) {
	mixed := t.TempDir()
	for _, d := range []string{"a", "test/a"} {
		if err := os.MkdirAll(filepath.Join(mixed, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	emptyDir, root := t.TempDir(), t.TempDir()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"data", "info", "folder", "--data", mixed}, []string{mixed + " has test/ but no train/", "expected DIR/CLASS/*.png, or DIR/train/CLASS/*.png"}},
		{[]string{"data", "info", "folder"}, []string{"needs --data DIR", "DIR/train/CLASS/*.png"}},
		{[]string{"data", "fetch", "cifar10", "--data", root, "--from", emptyDir}, []string{"--from " + emptyDir + ": a directory holding none of the cifar10 files", "expected"}},
		{[]string{"data", "fetch", "cifar10", "--data", file, "--from", emptyDir}, []string{"--data " + file + ": ", "not a directory", "expected a writable directory"}},
	} {
		code, _, errOut := runCLI(c.args...)
		if code == 0 || !strings.HasPrefix(errOut, "duelctl: ") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q, want one error line", c.args, code, errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: stderr %q does not mention %q", c.args, errOut, w)
			}
		}
	}
	// Nothing left but the fetch's lock file (empty, as between fetches).
	if entries, _ := os.ReadDir(root); len(entries) != 1 || entries[0].Name() != ".cifar10.fetch.lock" {
		t.Errorf("the failed fetch left %d entries in --data %s: %v", len(entries), root, entries)
	}
}

func TestBenchDataJSON(t *testing.T) {
	code, out, errOut := runCLI("bench", "data", "--seconds", "0.05", "--repeats", "1", "--batch", "16", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var v map[string]float64
	json.Unmarshal([]byte(lines[len(lines)-1]), &v)
	if v["views_per_s"] <= 0 {
		t.Fatalf("views_per_s missing: %s", out)
	}
}
