package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/duel-ssl/duel/duel/dist/mpi"
	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/duel/train"
)

// mpiTrainEnv, in a process started by mpirunTrain, holds the arguments
// of duelctl (the command first: train, bench), separated by newlines.
const mpiTrainEnv = "DUEL_TEST_MPI_TRAIN"

// TestMPITrainHelper is not a test: it is duelctl train in a rank started
// by mpirunTrain (it skips in an ordinary test run). A rank whose
// DUEL_TEST_MPI_FAIL_RANK is its own gets an invalid flag instead.
func TestMPITrainHelper(t *testing.T) {
	spec := os.Getenv(mpiTrainEnv)
	if spec == "" {
		t.Skip("helper of TestTrainMPIRun, run by mpirun")
	}
	args := append([]string{"duelctl"}, strings.Split(spec, "\n")...)
	if r, ok := mpi.LauncherRank(); ok && os.Getenv("DUEL_TEST_MPI_FAIL_RANK") == strconv.Itoa(r) {
		args = append(args, "--steps", "-1")
	}
	var out bytes.Buffer
	if code := run(args, &out, os.Stderr); code != 0 {
		t.Fatalf("duelctl %s: exit code %d\n%s", strings.Join(args[1:], " "), code, out.String())
	}
	os.Stdout.Write(out.Bytes())
}

// mpirunTrain runs duelctl with args (the command first) on 2 ranks under
// mpirun (this test binary's TestMPITrainHelper), skipping the test
// without MPI.
func mpirunTrain(t *testing.T, args []string, env ...string) (string, error) {
	t.Helper()
	return mpirunTrainOn(t, 2, args, env...)
}

// mpirunTrainOn is mpirunTrain on the given number of ranks.
func mpirunTrainOn(t *testing.T, ranks int, args []string, env ...string) (string, error) {
	t.Helper()
	cmd, err := mpi.LocalCommand(ranks, os.Args[0], "-test.run=^TestMPITrainHelper$", "-test.count=1", "-test.v")
	if errors.Is(err, mpi.ErrNoMPI) {
		t.Skipf("skipping the mpirun test: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	const limit = 3 * time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	run := exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	run.Env = append(append(os.Environ(), mpiTrainEnv+"="+strings.Join(args, "\n")), env...)
	// On time-out, SIGTERM lets the launcher take its ranks down; SIGKILL
	// (the default) would leave them behind.
	run.Cancel = func() error { return run.Process.Signal(syscall.SIGTERM) }
	run.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	run.Stdout, run.Stderr = &out, &out
	err = run.Run()
	if ctx.Err() != nil {
		t.Fatalf("mpirun did not end within %v:\n%s", limit, out.String())
	}
	return out.String(), err
}

// TestTrainMPIRun is the must-show of data-parallel training, end to end:
// mpirun -np 2 duelctl train with global batch 16 against one process with
// batch 16, same seed and steps: the losses agree up to float summation
// order, the memory holds the same sample ids, rank 0 alone wrote the run
// directory, and metrics.jsonl records the world size.
func TestTrainMPIRun(t *testing.T) {
	dir := t.TempDir()
	common := []string{"--preset", "tiny", "--method", "dmoco", "--steps", "5", "--log-every", "1", "--knn-every", "0", "--seed", "3"}
	two, one := filepath.Join(dir, "two"), filepath.Join(dir, "one")
	out, err := mpirunTrain(t, append([]string{"train"}, append(slices.Clone(common), "--out", two, "--dist-check-every", "1")...))
	if err != nil {
		t.Fatalf("mpirun: %v\n%s", err, out)
	}
	if !strings.Contains(out, "on 2 ranks (8 images each)") {
		t.Errorf("rank 0's log does not announce 2 ranks:\n%s", out)
	}
	if n := strings.Count(out, "training dmoco"); n != 1 {
		t.Errorf("%d ranks printed the log, expected rank 0 only:\n%s", n, out)
	}
	var buf bytes.Buffer
	if code := run(append([]string{"duelctl", "train", "--out", one}, common...), &buf, &buf); code != 0 {
		t.Fatalf("one process: %s", buf.String())
	}
	ma, err := train.ReadMetrics(one)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := train.ReadMetrics(two)
	if err != nil {
		t.Fatal(err)
	}
	if len(ma) != 5 || len(mb) != 5 {
		t.Fatalf("%d and %d metric lines, expected 5", len(ma), len(mb))
	}
	worst := 0.0
	for i := range ma {
		worst = max(worst, math.Abs(ma[i].Loss-mb[i].Loss)/math.Max(1, math.Abs(ma[i].Loss)))
		if mb[i].WorldSize != 2 {
			t.Errorf("step %d: world_size %d, expected 2", mb[i].Step, mb[i].WorldSize)
		}
	}
	t.Logf("largest relative loss difference, 2 ranks vs 1 process: %.3g", worst)
	if worst > 1e-4 {
		t.Errorf("losses differ by up to %.3g (relative)", worst)
	}
	if a, b := memoryIDs(t, one), memoryIDs(t, two); !slices.Equal(a, b) {
		t.Errorf("memory sample ids differ:\n%v\n%v", a, b)
	}
}

// TestTrainMPIGhostGroups: on 3 ranks the tiny preset's 2 ghost
// BatchNorm groups of dmoco (not a multiple of 3) become 3, said in the
// log and recorded in config.json, instead of a refusal; before the
// settings are validated, so a batch of 9, which the preset's 2 groups do
// not divide but 3 do, trains.
func TestTrainMPIGhostGroups(t *testing.T) {
	out := filepath.Join(t.TempDir(), "three")
	log, err := mpirunTrainOn(t, 3, []string{"train", "--preset", "tiny", "--method", "dmoco", "--steps", "1", "--batch", "9", "--knn-every", "0", "--out", out})
	if err != nil {
		t.Fatalf("mpirun -np 3: %v\n%s", err, log)
	}
	if !strings.Contains(log, "ghost BatchNorm groups: 3 (the preset's 2 is not a multiple of the 3 ranks") {
		t.Errorf("the log does not say the groups changed:\n%s", log)
	}
	if cfg, err := train.ReadConfig(out); err != nil || cfg.BNSplits != 3 {
		t.Errorf("config.json: %v, bn_splits %v, want 3", err, cfg)
	}
}

// TestTrainMPIBatchNotSharded: a global batch the ranks do not divide is
// refused as such, before the ghost groups are fitted to the ranks (which
// blamed --bn-splits, a flag the user never gave).
func TestTrainMPIBatchNotSharded(t *testing.T) {
	out := filepath.Join(t.TempDir(), "three")
	log, err := mpirunTrainOn(t, 3, []string{"train", "--preset", "tiny", "--method", "dmoco", "--steps", "1", "--batch", "16", "--knn-every", "0", "--out", out})
	if err == nil {
		t.Fatalf("mpirun -np 3 with --batch 16 succeeded:\n%s", log)
	}
	if !strings.Contains(log, "--batch: got 16, expected a multiple of the 3 ranks") || strings.Contains(log, "--bn-splits") || strings.Contains(log, "images each") {
		t.Errorf("the output does not refuse the batch alone, before announcing the ranks:\n%s", log)
	}
}

// TestTrainMPIRankFails: one rank failing (here an invalid flag on rank 1)
// ends the whole job with a non-zero status and a message naming the
// rank, instead of leaving rank 0 waiting forever.
func TestTrainMPIRankFails(t *testing.T) {
	start := time.Now()
	out, err := mpirunTrain(t, []string{"train", "--preset", "tiny", "--steps", "3", "--out", filepath.Join(t.TempDir(), "run")},
		"DUEL_TEST_MPI_FAIL_RANK=1")
	if err == nil {
		t.Fatalf("mpirun succeeded although rank 1 failed:\n%s", out)
	}
	if !strings.Contains(out, "rank 1 of 2") || !strings.Contains(out, "--steps") {
		t.Errorf("the output does not name the failed rank and its error:\n%s", out)
	}
	t.Logf("the job ended %v after the start: %v", time.Since(start).Round(time.Millisecond), err)
}

// TestBenchStepMPI: bench step of an SSL method on 2 ranks prints one
// answer, rank 0's, counting the images of both ranks.
func TestBenchStepMPI(t *testing.T) {
	out, err := mpirunTrain(t, []string{"bench", "step", "--method", "simclr", "--arch", "resnet18-w2", "--batch", "4",
		"--steps", "1", "--warmup", "1", "--size", "8", "--threads", "1", "--json"})
	if err != nil {
		t.Fatalf("mpirun: %v\n%s", err, out)
	}
	var answers []map[string]any
	for _, line := range strings.Split(out, "\n") {
		var m map[string]any
		if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &m) == nil {
			answers = append(answers, m)
		}
	}
	if len(answers) != 1 {
		t.Fatalf("%d JSON answers, expected rank 0's only:\n%s", len(answers), out)
	}
	if a := answers[0]; a["ranks"] != 2.0 || a["batch_per_rank"] != 4.0 || !(a["img_per_s"].(float64) > 0) || a["buckets"] == nil {
		t.Errorf("answer %v", a)
	}
}

// TestTrainMPIResume: a run of one process, stopped after step 3, resumes
// on 2 ranks (every rank reading the checkpoint) and ends as the
// uninterrupted run does: losses within float summation order, the same
// memory ids. (A constant learning rate makes the 3-step run's schedule
// that of the 6-step one.)
func TestTrainMPIResume(t *testing.T) {
	dir := t.TempDir()
	whole, cut := filepath.Join(dir, "whole"), filepath.Join(dir, "cut")
	common := []string{"--preset", "tiny", "--method", "dmoco", "--log-every", "1", "--knn-every", "0", "--seed", "5",
		"--lr", "0.001", "--min-lr", "0.001", "--warmup-steps", "0"}
	var buf bytes.Buffer
	for _, args := range [][]string{
		append([]string{"duelctl", "train", "--out", whole, "--steps", "6"}, common...),
		append([]string{"duelctl", "train", "--out", cut, "--steps", "3"}, common...),
	} {
		if code := run(args, &buf, &buf); code != 0 {
			t.Fatalf("%v: %s", args, buf.String())
		}
	}
	out, err := mpirunTrain(t, []string{"train", "--resume", "--out", cut, "--steps", "6"})
	if err != nil {
		t.Fatalf("mpirun: %v\n%s", err, out)
	}
	ma, err := train.ReadMetrics(whole)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := train.ReadMetrics(cut)
	if err != nil {
		t.Fatal(err)
	}
	if len(ma) != 6 || len(mb) != 6 {
		t.Fatalf("%d and %d metric lines, expected 6", len(ma), len(mb))
	}
	for i := range ma {
		if d := math.Abs(ma[i].Loss-mb[i].Loss) / math.Max(1, math.Abs(ma[i].Loss)); d > 1e-4 {
			t.Errorf("step %d: loss %v (one process) vs %v (resumed on 2 ranks)", ma[i].Step, ma[i].Loss, mb[i].Loss)
		}
	}
	if mb[5].WorldSize != 2 || mb[2].WorldSize != 0 {
		t.Errorf("world sizes %d (step 3, one process) and %d (step 6, 2 ranks)", mb[2].WorldSize, mb[5].WorldSize)
	}
	if a, b := memoryIDs(t, whole), memoryIDs(t, cut); !slices.Equal(a, b) {
		t.Errorf("memory ids differ:\n%v\n%v", a, b)
	}
}

// memoryIDs returns the sample ids of the memory in run's checkpoint.
func memoryIDs(t *testing.T, run string) []int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(run, train.CheckpointDir, "memory.bin"))
	if err != nil {
		t.Fatal(err)
	}
	var m memory.Memory
	if err := m.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	return m.IDs()
}
