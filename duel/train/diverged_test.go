package train

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/nn/safetensors"
)

// TestDivergedRunRefused trains at a learning rate that overflows the
// weights while the loss stays finite: the checkpoint holding NaN or
// infinite values is not saved (the last one is kept), the error says
// why and what to try, and a model.safetensors holding such values (as an
// older duelctl saved it) is refused when loaded.
func TestDivergedRunRefused(t *testing.T) {
	dir := t.TempDir()
	c := tinyConfig(t, "moco")
	c.Steps, c.KNNEvery, c.CheckpointEvery, c.LR = 6, 0, 1, 1e30
	_, err := Train(context.Background(), c, tinyOptions(dir))
	if !errors.Is(err, ErrDiverged) || !strings.Contains(err.Error(), "not saved, the last one is kept") || !strings.Contains(err.Error(), "try a lower --lr than 1e+30") {
		t.Fatalf("training at lr 1e30: %v, want ErrDiverged", err)
	}
	// The checkpoint kept loads, and is finite.
	run, err := LoadRunOn(dir, -1, "cpu")
	if err != nil {
		t.Fatalf("the checkpoint kept: %v", err)
	}
	if run.Step >= c.Steps {
		t.Errorf("checkpoint of step %d kept, want one before the divergence", run.Step)
	}

	// A model file holding a NaN, as an older duelctl saved it.
	path := filepath.Join(dir, CheckpointDir, ModelFile)
	f, err := safetensors.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range f.Tensors {
		if d, ok := tt.Data.([]float32); ok && len(d) > 0 {
			d[0] = float32(math.Inf(1))
			break
		}
	}
	if err := safetensors.Write(path, f.Tensors, f.Metadata); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadRunOn(dir, -1, "cpu"); !errors.Is(err, ErrDiverged) || !strings.Contains(err.Error(), path) {
		t.Errorf("loading a model holding +Inf: %v, want ErrDiverged naming %s", err, path)
	}
}
