package train

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/duel-ssl/duel/duel/ssl"
)

// goroutines returns the stacks of the process's goroutines but the
// parallel loops' pooled workers (internal/par keeps them between loops,
// as many as the most loops that ran at once) and the caller's.
func goroutines() []string {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for i, g := range bytes.Split(buf, []byte("\n\n")) {
		if i == 0 || bytes.Contains(g, []byte("internal/par.(*worker)")) {
			continue
		}
		out = append(out, string(g))
	}
	return out
}

// TestTrainLeavesNoGoroutines checks that Train stops every goroutine it
// starts (the data loader's, the memory's, the kNN monitor's), when it
// finishes a run and when it is interrupted: a process that trains runs
// one after another (duelctl reproduce) would otherwise accumulate them.
func TestTrainLeavesNoGoroutines(t *testing.T) {
	before := len(goroutines())
	for _, name := range ssl.Names() {
		dir := t.TempDir()
		c := tinyConfig(t, name)
		c.Steps, c.KNNEvery, c.CheckpointEvery, c.KeepCheckpoints = 4, 2, 2, true
		if _, err := Train(context.Background(), c, tinyOptions(dir)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		o := tinyOptions(dir)
		o.Resume, o.AfterStep = true, func(step int) {
			if step == 6 {
				cancel()
			}
		}
		c.Steps = 8
		if _, err := Train(ctx, c, o); !errors.Is(err, ErrInterrupted) {
			t.Fatalf("%s: interrupted run: %v, want ErrInterrupted", name, err)
		}
		cancel()
	}
	var left []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if left = goroutines(); len(left) <= before || time.Now().After(deadline) {
			break
		}
	}
	if len(left) > before {
		t.Fatalf("%d goroutines before the runs, %d after:\n%s", before, len(left), strings.Join(left, "\n\n"))
	}
}
