package main

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/duel/ssl"
	"github.com/duel-ssl/duel/duel/train"
	"github.com/duel-ssl/duel/internal/npy"
)

// lastLine returns the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func TestTrainBadFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--steps", "abc"}, `--steps: got "abc", expected an integer`},
		{[]string{"--steps", "-3"}, "--steps: got -3, expected an integer >= 0"},
		{[]string{"--method", "mocov3"}, `--method: got "mocov3", expected ` + strings.Join(ssl.Names(), ", ")},
		{[]string{"--preset", "gpu-huge"}, `--preset: got "gpu-huge", expected cpu-small, paper-cifar10, paper-stl10, tiny`},
		{[]string{"--stem", "vit"}, `--stem: got "vit", expected cifar or imagenet`},
		{[]string{"--max-age", "-1"}, "--max-age: got -1, expected an integer >= 0"},
		{[]string{"--mem-refresh", "-2"}, "--mem-refresh: got -2, expected an integer >= 0"},
		{[]string{"--admission", "eager"}, `--admission: got "eager", expected protected, compete, insert-first, max-score`},
		{[]string{"--rho-max", "1.5"}, "--rho-max: got 1.5, expected a probability in [0, 1]"},
		{[]string{"--lr", "fast"}, `--lr: got "fast", expected a number`},
		{[]string{"--lr", "0"}, "--lr: got 0, expected a positive number"},
		{[]string{"--batch", "1"}, "--batch: got 1, expected an integer >= 2"},
		{[]string{"--optimizer", "rmsprop"}, `--optimizer: got "rmsprop", expected adam, adamw, sgd or lars`},
		{[]string{"--policy", "lru"}, `--policy: got "lru", expected ` + strings.Join(memory.PolicyNames(), ", ")},
		{[]string{"--negatives", "all"}, `--negatives: got "all", expected batch, memory, mixed`},
		{[]string{"--method", "simclr", "--negatives", "memory"}, `--negatives: got "memory", expected batch (simclr has no memory)`},
		{[]string{"--eps", "2"}, "--eps: got 2, expected a number in [0, 1]"},
		{[]string{"--dist-check-every", "0"}, "--dist-check-every: got 0, expected an integer >= 1"},
		{[]string{"--seed", "-1"}, `--seed: got "-1", expected a non-negative integer`},
		{[]string{"--arch", "vit-b16"}, `--arch: got "vit-b16", expected resnet18`},
		{[]string{"--dataset", "imagenet"}, `--dataset: got "imagenet", expected default, cifar10`},
		// --data beside the embedded set is refused: ignored, a run on the embedded set would pass for one on the directory's images.
		{[]string{"--data", "/some/cifar10"}, `--data: got "/some/cifar10", expected nothing with --dataset default`},
		{[]string{"--dataset", "default", "--data", "/some/cifar10"}, `--data: got "/some/cifar10", expected nothing with --dataset default`},
		{[]string{"--batch", "30", "--bn-splits", "4"}, "--bn-splits: got 4, expected a divisor of --batch 30"},
		{[]string{"--device", "cuda"}, "--device cuda: "},
		{[]string{"--device", "tpu"}, `--device: got "tpu", expected cpu or cuda`},
		{[]string{"--resume"}, `--out: got "", expected the directory of the run to resume`},
		{[]string{"--resume", "--out", dir}, `--out: got "` + dir + `", expected the directory of a run to resume`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := append([]string{"train"}, tc.args...)
			if !strings.Contains(strings.Join(tc.args, " "), "--resume") {
				args = append(args, "--out", filepath.Join(dir, "x"))
			}
			code, stdout, stderr := replayRunCLI(args...)
			if code == 0 {
				t.Fatalf("exit 0, stdout %q", stdout)
			}
			if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "duelctl: "+tc.want) {
				t.Errorf("stderr %q, expected one line starting with %q", stderr, "duelctl: "+tc.want)
			}
		})
	}
}

func TestTrainResumeAndEmbed(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	code, stdout, stderr := replayRunCLI("train", "--preset", "tiny", "--method", "dmoco", "--steps", "2", "--out", out, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(lastLine(stdout)), &res); err != nil {
		t.Fatalf("last line %q: %v", lastLine(stdout), err)
	}
	for _, k := range []string{"run", "steps", "loss", "img_per_s"} {
		if _, ok := res[k]; !ok {
			t.Errorf("--json lacks %q: %v", k, res)
		}
	}
	if res["run"] != out || res["steps"] != 2.0 {
		t.Errorf("--json %v", res)
	}
	// Resume with more steps; changing a model setting is refused.
	code, _, stderr = replayRunCLI("train", "--resume", "--out", out, "--lr", "0.1")
	if code == 0 || !strings.HasPrefix(stderr, `duelctl: --lr: got "0.1", expected nothing with --resume`) {
		t.Errorf("resume with --lr: exit %d, %q", code, stderr)
	}
	// The command that started the run, given again with --resume: its
	// settings are the run's, so they are accepted.
	cfg, err := train.ReadConfig(out)
	if err != nil {
		t.Fatal(err)
	}
	lr := strconv.FormatFloat(cfg.LR, 'g', -1, 64)
	if code, _, stderr = replayRunCLI("train", "--resume", "--out", out, "--lr", "0.1"); code == 0 || !strings.Contains(stderr, `or the run's "`+lr+`"`) {
		t.Errorf("resume with another --lr: exit %d, %q does not name the run's %s", code, stderr, lr)
	}
	if code, _, stderr = replayRunCLI("train", "--resume", "--out", out, "--method", "moco"); code == 0 ||
		!strings.HasPrefix(stderr, `duelctl: --method: got "moco", expected nothing with --resume, or the run's "dmoco"`) {
		t.Errorf("resume with another --method: exit %d, %q", code, stderr)
	}
	code, stdout, stderr = replayRunCLI("train", "--preset", "tiny", "--method", "dmoco", "--lr", lr, "--resume", "--out", out, "--steps", "3", "--json")
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, stderr)
	}
	if err := json.Unmarshal([]byte(lastLine(stdout)), &res); err != nil || res["steps"] != 3.0 {
		t.Errorf("resume: %q", lastLine(stdout))
	}
	// Fewer steps than the checkpoint's is refused, and config.json keeps
	// its steps (not rewritten with the smaller number).
	if code, _, stderr = replayRunCLI("train", "--resume", "--out", out, "--steps", "1"); code == 0 || strings.Count(stderr, "\n") != 1 ||
		!strings.HasPrefix(stderr, "duelctl: --steps: got 1, expected at least the checkpoint's step 3 with --resume") {
		t.Errorf("resume with fewer steps: exit %d, %q", code, stderr)
	}
	if cfg, err := train.ReadConfig(out); err != nil {
		t.Error(err)
	} else if cfg.Steps != 3 {
		t.Errorf("config.json after a refused resume: steps %d, want 3", cfg.Steps)
	}
	// A new run over it is refused.
	code, _, stderr = replayRunCLI("train", "--preset", "tiny", "--out", out)
	if code == 0 || !strings.Contains(stderr, "--resume") {
		t.Errorf("new run over a run: exit %d, %q", code, stderr)
	}

	// embed
	dir := t.TempDir()
	in, feats := filepath.Join(dir, "x.npy"), filepath.Join(dir, "y.npy")
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, 5*3*32*32)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	if err := npy.WriteFile(in, &npy.Array{Shape: []int{5, 3, 32, 32}, Float32: x}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		layer string
		dim   int
	}{{"backbone", 32}, {"projector", 32}} {
		code, stdout, stderr = replayRunCLI("embed", "--run", out, "--input", in, "--out", feats, "--layer", tc.layer, "--batch", "2", "--json")
		if code != 0 {
			t.Fatalf("embed: exit %d: %s", code, stderr)
		}
		var er embedResult
		if err := json.Unmarshal([]byte(lastLine(stdout)), &er); err != nil || er != (embedResult{Out: feats, N: 5, Dim: tc.dim, Layer: tc.layer}) {
			t.Errorf("embed %s --json: last line %q (%v)", tc.layer, lastLine(stdout), err)
		}
		a, err := npy.ReadFile(feats)
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Shape) != 2 || a.Shape[0] != 5 || a.Shape[1] != tc.dim || a.Float32 == nil {
			t.Errorf("embed %s: shape %v dtype %s", tc.layer, a.Shape, a.DType())
		}
	}
	// No images: a 0 x D array.
	empty := filepath.Join(dir, "empty.npy")
	if err := npy.WriteFile(empty, &npy.Array{Shape: []int{0, 3, 32, 32}, Float32: []float32{}}); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr = replayRunCLI("embed", "--run", out, "--input", empty, "--out", feats); code != 0 {
		t.Errorf("embed of 0 images: exit %d: %s", code, stderr)
	} else if a, err := npy.ReadFile(feats); err != nil || !slices.Equal(a.Shape, []int{0, 32}) || a.Float32 == nil {
		t.Errorf("embed of 0 images: %v, shape %v", err, a.Shape)
	}
	bad := filepath.Join(dir, "bad.npy")
	npy.WriteFile(bad, &npy.Array{Shape: []int{5, 3072}, Float32: x})
	gray := filepath.Join(dir, "gray.npy")
	npy.WriteFile(gray, &npy.Array{Shape: []int{2, 1, 32, 32}, Float32: make([]float32, 2*32*32)})
	huge := filepath.Join(dir, "huge.npy")
	npy.WriteFile(huge, &npy.Array{Shape: []int{1, 3, 2, 2}, Float64: []float64{0, 1e300, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--input", in, "--out", feats}, `--run: got "", expected a path`},
		{[]string{"--run", out, "--input", in, "--out", feats, "--layer", "fc"}, `--layer: got "fc", expected backbone or projector`},
		{[]string{"--run", dir, "--input", in, "--out", feats}, "--run: run " + dir},
		{[]string{"--run", out, "--input", bad, "--out", feats}, "--input " + bad + ": shape [5 3072], expected N x C x H x W"},
		{[]string{"--run", out, "--input", filepath.Join(dir, "none.npy"), "--out", feats}, "--input: "},
		{[]string{"--run", out, "--input", gray, "--out", feats}, "--input " + gray + ": 1 channel, expected 3: the run trained on RGB images"},
		{[]string{"--run", out, "--input", huge, "--out", feats}, "--input " + huge + ": element 1 is 1e+300, expected a finite number within float32's range"},
		// Unwritable --out: refused before the model runs, naming what is wrong.
		{[]string{"--run", out, "--input", in, "--out", dir}, `--out: got "` + dir + `", expected the path of a file to write, not a directory`},
		{[]string{"--run", out, "--input", in, "--out", filepath.Join(dir, "none", "y.npy")}, `--out: got "` + filepath.Join(dir, "none", "y.npy") + `", expected a file in an existing directory`},
		{[]string{"--run", out, "--input", in, "--out", filepath.Join(in, "y.npy")}, `--out: got "` + filepath.Join(in, "y.npy") + `", expected a file in a directory (` + in + " is a file)"},
	} {
		code, _, stderr := replayRunCLI(append([]string{"embed"}, tc.args...)...)
		if code == 0 || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "duelctl: "+tc.want) {
			t.Errorf("embed %v: exit %d, stderr %q, expected %q", tc.args, code, stderr, tc.want)
		}
	}
	_ = os.Remove(feats)
}

// TestTrainConfig starts runs from another run's settings (--config, a run
// directory or its config.json): every setting is the other run's but for
// the flags given, and the combinations that cannot mean anything are
// refused with one line naming --config or the flag.
func TestTrainConfig(t *testing.T) {
	dir := t.TempDir()
	first := filepath.Join(dir, "first")
	if code, _, stderr := replayRunCLI("train", "--preset", "tiny", "--method", "moco", "--lr", "0.003", "--steps", "1", "--knn-every", "0", "--out", first); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	want, err := train.ReadConfig(first)
	if err != nil {
		t.Fatal(err)
	}
	for i, from := range []string{first, filepath.Join(first, train.ConfigFile)} {
		out := filepath.Join(dir, "again"+strconv.Itoa(i))
		if code, _, stderr := replayRunCLI("train", "--config", from, "--seed", "7", "--steps", "2", "--out", out); code != 0 {
			t.Fatalf("--config %s: exit %d: %s", from, code, stderr)
		}
		got, err := train.ReadConfig(out)
		if err != nil {
			t.Fatal(err)
		}
		w := *want
		w.Seed, w.Steps = 7, 2
		got.Ran, w.Ran = nil, nil
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(&w)
		if string(gj) != string(wj) {
			t.Errorf("--config %s: config.json\n%s\nwant\n%s", from, gj, wj)
		}
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"steps": 3, "bogus": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", filepath.Join(dir, "none")}, `--config: got "` + filepath.Join(dir, "none") + `", expected a run directory or its config.json`},
		{[]string{"--config", dir}, `--config: got "` + dir + `", expected a run directory or its config.json (the directory has none)`},
		{[]string{"--config", bad}, `--config: ` + bad + `: json: unknown field "bogus"`},
		{[]string{"--config", first, "--method", "simclr"}, `--method: got "simclr", expected nothing with --config, or its "moco"`},
		{[]string{"--config", first, "--preset", "cpu-small"}, `--preset: got "cpu-small", expected nothing with --config, or its "tiny"`},
		{[]string{"--config", first, "--resume", "--out", first}, `--config: got "` + first + `", expected nothing with --resume`},
		{[]string{"--config", first, "--out", first}, "--resume"},
	} {
		args := append([]string{"train"}, tc.args...)
		if !slices.Contains(tc.args, "--out") {
			args = append(args, "--out", filepath.Join(dir, "x"))
		}
		code, _, stderr := replayRunCLI(args...)
		if code == 0 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) || !strings.HasPrefix(stderr, "duelctl: ") {
			t.Errorf("train %v: exit %d, stderr %q, expected one line with %q", tc.args, code, stderr, tc.want)
		}
	}
}
