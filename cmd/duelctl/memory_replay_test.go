package main

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/internal/npy"
)

// replayFixture writes a small clustered stream (n rows, 3 classes, class
// 0 dominant) as features and labels .npy files into dir.
func replayFixture(t *testing.T, dir string, n, z int) (features, labels string) {
	rng := rand.New(rand.NewPCG(1, 2))
	rows := make([]float32, n*z)
	lab := make([]int64, n)
	for r := 0; r < n; r++ {
		c := 0
		if rng.Float64() > 0.7 {
			c = 1 + rng.IntN(2)
		}
		lab[r] = int64(c)
		for i := 0; i < z; i++ {
			rows[r*z+i] = float32(0.05 * rng.NormFloat64())
		}
		rows[r*z+c] += 1
	}
	features, labels = filepath.Join(dir, "f.npy"), filepath.Join(dir, "l.npy")
	if err := npy.WriteFile(features, &npy.Array{Shape: []int{n, z}, Float32: rows}); err != nil {
		t.Fatal(err)
	}
	if err := npy.WriteFile(labels, &npy.Array{Shape: []int{n}, Int64: lab}); err != nil {
		t.Fatal(err)
	}
	return features, labels
}

// replayRunCLI runs duelctl with args and returns its exit code, stdout and stderr.
func replayRunCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(append([]string{"duelctl"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func TestMemoryReplay(t *testing.T) {
	dir := t.TempDir()
	f, l := replayFixture(t, dir, 20+10*8+5, 6)
	out := filepath.Join(dir, "out")
	results := map[string]replayResult{}
	for _, policy := range memory.PolicyNames() {
		args := []string{"memory", "replay", "--features", f, "--labels", l, "--size", "20", "--batch", "8", "--policy", policy, "--json"}
		if policy == "duel" {
			args = append(args, "--out", out)
		}
		code, stdout, stderr := replayRunCLI(args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", policy, code, stderr)
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		var res replayResult
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
			t.Fatalf("%s: last line is not JSON: %v\n%s", policy, err, stdout)
		}
		if len(res.Kept) != 20 || !slices.IsSorted(res.Kept) || res.Updates != 10 || res.ClassEntropy == nil || len(res.ClassCounts) != 3 {
			t.Fatalf("%s: result %+v", policy, res)
		}
		if res.Kept[len(res.Kept)-1] >= 100 {
			t.Fatalf("%s: kept row %d of the ignored partial batch", policy, res.Kept[len(res.Kept)-1])
		}
		results[policy] = res
	}
	if want := []int64{80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99}; !slices.Equal(results["fifo"].Kept, want) {
		t.Fatalf("fifo kept %v, want the last 20 rows of the full batches", results["fifo"].Kept)
	}
	if *results["duel"].ClassEntropy <= *results["fifo"].ClassEntropy {
		t.Fatalf("duel entropy %v not above fifo's %v", *results["duel"].ClassEntropy, *results["fifo"].ClassEntropy)
	}
	kept, err := npy.ReadFile(filepath.Join(out, "kept.npy"))
	if err != nil || !slices.Equal(kept.Int64, results["duel"].Kept) {
		t.Fatalf("kept.npy: %v %v", kept, err)
	}
	for _, name := range []string{"class_frequency.png", "replay.json"} {
		if st, err := os.Stat(filepath.Join(out, name)); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", name, err)
		}
	}
	// Without labels: no class fields.
	code, stdout, _ := replayRunCLI("memory", "replay", "--features", f, "--size", "20", "--batch", "8", "--json")
	if code != 0 || strings.Contains(stdout, "class_entropy") {
		t.Fatalf("without labels: exit %d, %s", code, stdout)
	}
}

func TestMemoryReplayErrors(t *testing.T) {
	dir := t.TempDir()
	f, l := replayFixture(t, dir, 30, 4)
	write := func(name string, a *npy.Array) string {
		p := filepath.Join(dir, name)
		if err := npy.WriteFile(p, a); err != nil {
			t.Fatal(err)
		}
		return p
	}
	zero := write("zero.npy", &npy.Array{Shape: []int{3, 2}, Float32: []float32{1, 0, 0, 0, 1, 1}})
	nan := write("nan.npy", &npy.Array{Shape: []int{3, 2}, Float64: []float64{1, 0, 1, 1, math.NaN(), 1}})
	vec := write("vec.npy", &npy.Array{Shape: []int{6}, Float32: make([]float32, 6)})
	ints := write("ints.npy", &npy.Array{Shape: []int{3, 2}, Int32: make([]int32, 6)})
	short := write("short.npy", &npy.Array{Shape: []int{5}, Int64: make([]int64, 5)})
	neg := write("neg.npy", &npy.Array{Shape: []int{30}, Int64: append(make([]int64, 29), -1)})
	huge := write("huge.npy", &npy.Array{Shape: []int{30}, Int64: append(make([]int64, 29), 1e12)})
	floatLabels := write("fl.npy", &npy.Array{Shape: []int{30}, Float32: make([]float32, 30)})
	notNpy := filepath.Join(dir, "text.npy")
	os.WriteFile(notNpy, []byte("hello"), 0o644)
	base := func(extra ...string) []string {
		return append([]string{"memory", "replay", "--size", "2", "--batch", "2"}, extra...)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{base(), []string{"--features"}},
		{base("--features", filepath.Join(dir, "missing.npy")), []string{"--features", "missing.npy", "no such file"}},
		{base("--features", notNpy), []string{"--features", "text.npy", "not a .npy file"}},
		{base("--features", zero), []string{"zero.npy", "row 1", "all zeros"}},
		{base("--features", nan), []string{"nan.npy", "row 2", "not finite"}},
		{base("--features", vec), []string{"vec.npy", "2 dimensions"}},
		{base("--features", ints), []string{"ints.npy", "expected float32 or float64"}},
		{base("--features", f, "--labels", short), []string{"--labels", "short.npy", "5 labels", "30"}},
		{base("--features", f, "--labels", neg), []string{"--labels", "neg.npy", "row 29"}},
		{base("--features", f, "--labels", huge), []string{"--labels", "huge.npy", "label 1000000000000 at row 29", "0..65535"}},
		{base("--features", f, "--labels", floatLabels), []string{"--labels", "fl.npy", "int32 or int64"}},
		{base("--features", f, "--policy", "lru"), []string{"--policy", "lru", strings.Join(memory.PolicyNames(), ", ")}},
		{base("--features", f, "--policy", "fifo", "--admission", "compete"), []string{"--admission", "duel only"}},
		{base("--features", f, "--admission", "eager"), []string{"--admission", "eager", "protected, compete, insert-first, max-score"}},
		{base("--features", f, "--device", "cuda"), []string{"--device cuda"}},
		{[]string{"memory", "replay", "--features", f, "--size", "31", "--batch", "2"}, []string{"--size 31", "30 rows"}},
		{[]string{"memory", "replay", "--features", f, "--size", "0", "--batch", "2"}, []string{"--size", "at least 1"}},
		{[]string{"memory", "replay", "--features", f, "--size", "29", "--batch", "2"}, []string{"--size 29 and --batch 2", "holds 30 rows, expected at least --size + --batch = 31", "no update"}},
		{[]string{"memory", "replay", "--features", f, "--size", "30", "--batch", "1"}, []string{"--size 30 and --batch 1", "31"}},
		{[]string{"memory", "replay", "--features", f, "--size", "3", "--batch", "-1"}, []string{"--batch", "at least 1"}},
		{base("--features", f, "--labels", l, "--out", filepath.Join(f, "sub")), []string{"--out"}},
	} {
		code, _, stderr := replayRunCLI(c.args...)
		if code == 0 {
			t.Errorf("%v: exit 0", c.args)
			continue
		}
		if !strings.HasPrefix(stderr, "duelctl: ") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: stderr %q is not one line starting with duelctl:", c.args, stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: stderr %q does not mention %q", c.args, stderr, w)
			}
		}
	}
}

// TestMemoryReplayOut replays into one --out directory in turn: each
// replay.json records the settings of its own replay (the admission for
// duel alone, the seed for the seeded policies alone, the labels only when
// given), and a replay without --labels removes the class_frequency.png of
// an earlier one.
func TestMemoryReplayOut(t *testing.T) {
	dir := t.TempDir()
	f, l := replayFixture(t, dir, 20+10*8, 6)
	out := filepath.Join(dir, "out")
	for _, tc := range []struct {
		name     string
		args     []string
		want     map[string]any // replay.json's settings; nil: absent
		wantPlot bool
	}{
		{
			name: "duel with labels",
			args: []string{"--labels", l, "--admission", "compete", "--safe", "--seed", "9"},
			want: map[string]any{"policy": "duel", "admission": "compete", "seed": nil, "safe": true, "device": "cpu",
				"features": f, "labels": l, "size": 20.0, "batch": 8.0},
			wantPlot: true,
		},
		{
			name: "random without labels",
			args: []string{"--policy", "random", "--seed", "5"},
			want: map[string]any{"policy": "random", "admission": nil, "seed": 5.0, "safe": false, "device": "cpu",
				"features": f, "labels": nil},
		},
		{
			name: "duel without labels",
			args: []string{},
			want: map[string]any{"policy": "duel", "admission": "protected", "seed": nil, "safe": false, "labels": nil},
		},
		{
			name:     "fifo with labels, the seed ignored",
			args:     []string{"--labels", l, "--policy", "fifo", "--seed", "3"},
			want:     map[string]any{"policy": "fifo", "admission": nil, "seed": nil, "labels": l},
			wantPlot: true,
		},
		{
			name: "reservoir without labels",
			args: []string{"--policy", "reservoir"},
			want: map[string]any{"policy": "reservoir", "seed": 0.0, "labels": nil},
		},
	} {
		args := append([]string{"memory", "replay", "--features", f, "--size", "20", "--batch", "8", "--out", out}, tc.args...)
		if code, _, stderr := replayRunCLI(args...); code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.name, code, stderr)
		}
		_, err := os.Stat(filepath.Join(out, "class_frequency.png"))
		if gotPlot := err == nil; gotPlot != tc.wantPlot {
			t.Errorf("%s: class_frequency.png present %v (%v), want %v", tc.name, gotPlot, err, tc.wantPlot)
		}
		b, err := os.ReadFile(filepath.Join(out, "replay.json"))
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: replay.json: %v", tc.name, err)
		}
		for key, want := range tc.want {
			v, ok := got[key]
			switch {
			case want == nil && ok:
				t.Errorf("%s: replay.json has %q: %v, want it absent", tc.name, key, v)
			case want != nil && v != want:
				t.Errorf("%s: replay.json %q: %v (%T), want %v", tc.name, key, v, v, want)
			}
		}
	}
}

// TestMemoryReplayScoreOfAbsentClass checks the DUEL score by class of an
// initial memory that holds no row of some class: null in the JSON and
// n/a in the text (not 0.00, which reads "at the mean"),
// numbers for the classes it holds.
func TestMemoryReplayScoreOfAbsentClass(t *testing.T) {
	dir := t.TempDir()
	f, l := replayFixture(t, dir, 30, 4)
	a, err := npy.ReadFile(l)
	if err != nil {
		t.Fatal(err)
	}
	labels, _ := a.Int64Vector()
	const k = 3
	held := map[int64]bool{}
	for _, c := range labels[:k] {
		held[c] = true
	}
	if len(held) == 3 {
		t.Fatalf("the fixture's first %d rows hold every class: %v", k, labels[:k])
	}
	code, stdout, stderr := replayRunCLI("memory", "replay", "--features", f, "--labels", l, "--size", strconv.Itoa(k), "--batch", "3", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res replayResult
	if err := json.Unmarshal([]byte(lastLine(stdout)), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.InitialScoreByClass) != 3 {
		t.Fatalf("initial_score_by_class %v, want 3 classes", res.InitialScoreByClass)
	}
	for c, v := range res.InitialScoreByClass {
		if (v != nil) != held[int64(c)] {
			t.Errorf("class %d (held %v): score %v", c, held[int64(c)], v)
		}
	}
	if !strings.Contains(stdout, "n/a") {
		t.Errorf("the text does not say n/a for a class without rows:\n%s", stdout)
	}
}
