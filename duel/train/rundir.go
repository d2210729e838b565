package train

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// prepareDir creates the run directory, refusing to start a new run over a
// checkpoint unless resuming.
func prepareDir(dir string, resume bool) error {
	if resume {
		if _, err := checkpointPath(dir); err != nil {
			return fmt.Errorf("--resume: %w", err)
		}
		return nil
	}
	if _, err := checkpointPath(dir); err == nil {
		return fmt.Errorf("--out %s: holds a run already (continue it with --resume, or choose another --out)", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	// A new run starts with fresh metrics.
	if err := os.Remove(filepath.Join(dir, MetricsFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
