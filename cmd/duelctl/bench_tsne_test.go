package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/duel-ssl/duel/duel/train"
	"github.com/duel-ssl/duel/internal/npy"
)

// TestBenchTSNE runs bench tsne on generated rows and on an .npy, both
// methods, and checks the JSON.
func TestBenchTSNE(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.npy")
	x := make([]float32, 40*3)
	for i := range x {
		x[i] = float32(i%7) + float32(i/21)
	}
	if err := npy.WriteFile(path, &npy.Array{Shape: []int{40, 3}, Float32: x}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args   []string
		n, dim int
		method string
		theta  float64
	}{
		{[]string{"--n", "60", "--dim", "8", "--classes", "3"}, 60, 8, "barnes-hut", 0.5},
		{[]string{"--n", "60", "--dim", "8", "--tsne-method", "exact"}, 60, 8, "exact", 0},
		{[]string{"--features", path, "--tsne-theta", "0.3"}, 40, 3, "barnes-hut", 0.3},
		{[]string{"--n", "60", "--dim", "8", "--device", "cpu"}, 60, 8, "barnes-hut", 0.5},
	} {
		code, stdout, stderr := runCLI(append([]string{"bench", "tsne", "--iters", "30", "--json"}, tc.args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, stderr)
		}
		var res benchTSNEResult
		if err := json.Unmarshal([]byte(lastLine(stdout)), &res); err != nil {
			t.Fatalf("%v: %v in %q", tc.args, err, stdout)
		}
		if res.N != tc.n || res.Dim != tc.dim || res.Method != tc.method || res.Theta != tc.theta || res.Iters != 30 || !(res.Seconds > 0) || !(res.KL >= 0) {
			t.Errorf("%v: %+v", tc.args, res)
		}
	}
}

// TestBenchTSNEErrors: every refusal is one line naming the flag or file.
func TestBenchTSNEErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.npy")
	if err := os.WriteFile(bad, []byte("not an npy"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--tsne-method", "fast"}, []string{"--tsne-method", `"fast"`, "barnes-hut or exact"}},
		{[]string{"--tsne-theta", "0"}, []string{"--tsne-theta: got 0"}},
		{[]string{"--tsne-method", "exact", "--tsne-theta", "0.2"}, []string{"--tsne-theta 0.2", "exact method"}},
		{[]string{"--iters", "0"}, []string{"--iters: got 0"}},
		{[]string{"--iters", "1000000000"}, []string{"--iters: got 1000000000, expected an integer in [1, 100000]"}},
		{[]string{"--perplexity", "-2"}, []string{"--perplexity: got -2"}},
		{[]string{"--n", "1"}, []string{"-n: got 1"}},
		{[]string{"--dim", "0"}, []string{"--dim: got 0"}},
		{[]string{"--classes", "0"}, []string{"--classes: got 0"}},
		{[]string{"--features", bad}, []string{"--features", "bad.npy"}},
		{[]string{"--features", filepath.Join(t.TempDir(), "missing.npy")}, []string{"--features", "missing.npy"}},
		{[]string{"stray"}, []string{"unexpected argument", "stray"}},
		// The contract's --device: the t-SNE runs on the CPU only, with
		// or without a GPU.
		{[]string{"--device", "cuda"}, []string{"--device cuda", "duelctl bench tsne runs on the CPU only", "expected --device cpu"}},
		{[]string{"--device", "tpu"}, []string{"--device: got \"tpu\"", "expected cpu"}},
	} {
		wantCLIError(t, append([]string{"bench", "tsne"}, tc.args...), tc.want...)
	}
	if train.MachineMemory() <= 0 {
		t.Skip("the machine's memory is unknown: the exact method's memory is not checked")
	}
	wantCLIError(t, []string{"bench", "tsne", "--tsne-method", "exact", "--n", "1000000", "--dim", "1"},
		`--tsne-method: got "exact", needs about`, "pair matrices of 1000000 points", "this machine has ")
}
