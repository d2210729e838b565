package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReproduceSmoke(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runCLI("reproduce", "--preset", "smoke", "--out", out, "--steps", "2", "--probe-limit", "40", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var v struct {
		Out   string `json:"out"`
		Cells []struct {
			Method string  `json:"method"`
			Top1   float64 `json:"top1_mean"`
		} `json:"cells"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &v); err != nil {
		t.Fatalf("last line is not JSON: %v\n%s", err, stdout)
	}
	if v.Out != out || len(v.Cells) != 2 || v.Cells[0].Method != "moco" || v.Cells[1].Method != "dmoco" {
		t.Fatalf("result: %+v", v)
	}
	for _, f := range []string{"table.md", "results.json", "runs/dmoco-rho0.75-seed0/probe.json", "runs/dmoco-rho0.75-seed0/model.safetensors"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestReproduceBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--preset", "table9", "--out", "x"}, "duelctl: --preset: unknown preset \"table9\""},
		{[]string{"--preset", "smoke", "--out", "x", "--rho", "0.5,high"}, "duelctl: --rho: got \"high\""},
		{[]string{"--preset", "smoke", "--out", "x", "--rho", "1.5"}, "duelctl: --rho: got 1.5"},
		{[]string{"--preset", "smoke", "--out", "x", "--seeds", "-2"}, "duelctl: --seeds: got -2"},
		{[]string{"--preset", "smoke", "--out", "x", "--methods", "mocoo"}, "duelctl: run mocoo-rho0.75-seed0: --method: got \"mocoo\""},
	} {
		code, _, stderr := runCLI(append([]string{"reproduce"}, tc.args...)...)
		if code == 0 || !strings.HasPrefix(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want one line starting with %q", tc.args, code, stderr, tc.want)
		}
	}
}
