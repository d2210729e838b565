package main

import (
	"bytes"
	"encoding/json"
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
		{[]string{"data", "fetch", "mnist", "--bogus"}, "unknown flag --bogus"},
		{[]string{"data", "fetch", "mnist", "--data"}, "--data: missing value"},
		{[]string{"data", "fetch", "cifar10", "--data", "DIR", "--from", "/nonexistent.tgz"}, "/nonexistent.tgz"},
		{[]string{"data", "info", "cifar10", "--data", "/nonexistent"}, "no CIFAR-10 files"},
		{[]string{"data", "info", "default", "--split", "val"}, "--split"},
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
