package reproduce

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/duel-ssl/duel/duel/train"
	"github.com/duel-ssl/duel/internal/atomicfile"
)

// archiveDir is the report's copy of its runs' settings and measures.
const archiveDir = "runs"

// archiveRuns copies the config.json and probe.json of every finished run
// into dir/runs/<run>/: a committed report then holds each run's settings
// and evaluation, and copying that folder into another OUT/runs lets
// duelctl reproduce go on with the grid there (a run directory holding
// both files counts as finished). Results whose run directory no longer
// exists are left out.
func archiveRuns(dir string, runs []RunResult) error {
	for _, r := range runs {
		name := filepath.Base(r.Dir)
		dst := filepath.Join(dir, archiveDir, name)
		if filepath.Clean(dst) == filepath.Clean(r.Dir) {
			continue // the report's own archive is the run directory
		}
		if _, err := os.Stat(r.Dir); errors.Is(err, fs.ErrNotExist) {
			continue // a result whose run directory is gone: nothing to copy
		}
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return fmt.Errorf("--report %s: %w", dir, err)
		}
		for _, f := range []string{train.ConfigFile, probeFile} {
			b, err := os.ReadFile(filepath.Join(r.Dir, f))
			if err != nil {
				return fmt.Errorf("run %s: %w (expected a finished run's %s)", name, err, f)
			}
			if err := atomicfile.WriteFile(filepath.Join(dst, f), b); err != nil {
				return err
			}
		}
	}
	return nil
}
