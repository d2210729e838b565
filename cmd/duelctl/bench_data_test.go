package main

import (
	"strings"
	"testing"

	"github.com/duel-ssl/duel/duel/train"
)

// TestBenchDataErrors: every refusal is one line naming the flag, before
// the loader allocates anything.
func TestBenchDataErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--batch", "0"}, "--batch: got 0"},
		{[]string{"--workers", "-1"}, "--workers: got -1"},
		{[]string{"--workers", "100000"}, "--workers: got 100000, expected 0 (GOMAXPROCS) or an integer in [1, 1024]"},
		{[]string{"--size", "0"}, "--size: got 0"},
		{[]string{"--size", "100000", "--batch", "2"}, "--size: got 100000, expected an integer in [1, 1024]"},
		{[]string{"--repeats", "0"}, "--repeats: got 0"},
		{[]string{"--seconds", "0"}, "--seconds: got 0"},
		// Too short for one batch: nothing to measure.
		{[]string{"--seconds", "1e-9", "--repeats", "1", "--batch", "8"}, "--seconds 1e-09: no batch finished in that time"},
		// Bounded: a typo would hold the machine for years.
		{[]string{"--seconds", "1e300"}, "--seconds: got 1e+300, expected a positive number of at most 3600"},
		{[]string{"--repeats", "1000000000"}, "--repeats: got 1000000000, expected an integer in [1, 1000]"},
		{[]string{"--preset", "fancy", "--seconds", "0.01", "--repeats", "1"}, "--preset"},
		// The contract's --device: the loader runs on the CPU only, with
		// or without a GPU.
		{[]string{"--device", "cuda"}, "--device cuda: duelctl bench data runs on the CPU only"},
		{[]string{"--device", "tpu"}, "--device: got \"tpu\", expected cpu"},
	} {
		wantCLIError(t, append([]string{"bench", "data"}, tc.args...), tc.want)
	}
	code, stdout, stderr := runCLI("bench", "data", "--device", "cpu", "--batch", "8", "--seconds", "0.05", "--repeats", "1", "--json")
	if code != 0 || !strings.Contains(lastLine(stdout), "{") {
		t.Errorf("bench data --device cpu: exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
	if train.MachineMemory() <= 0 {
		t.Skip("the machine's memory is unknown: --batch 100000000 would not be refused")
	}
	wantCLIError(t, []string{"bench", "data", "--batch", "100000000"}, "--batch: got 100000000, needs about ", "for the loader's 3 batches of two views", "this machine has ")
}
