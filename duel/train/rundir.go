package train

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/duel-ssl/duel/internal/dirlock"
)

// trainedArtefacts are the files a run leaves once it has trained or been
// analysed: the kept checkpoints, the final model and duelctl analyze's
// outputs (analysis/, analysis.json, report.md). A new run refuses a
// directory holding one without a checkpoint (removed by hand): they are
// another run's, and eval --step, analyze or a reader of the directory
// would take them for the new run's.
var trainedArtefacts = []string{KeptDir, ModelFile, "analysis", "analysis.json", "report.md"}

// lockRun takes the lock of the run directory dir (internal/dirlock), held
// while the run trains, so that a second process training it at once (a
// --resume started twice) is refused rather than interleaving its steps
// into metrics.jsonl and its checkpoints with the first's. A new run's
// directory is created first; a missing one to resume is left to
// prepareDir's error.
func lockRun(dir string, resume bool) (release func(), err error) {
	if !resume {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("--out: %w", err)
		}
	} else if _, err := os.Stat(dir); err != nil {
		return func() {}, nil
	}
	release, err = dirlock.TryLock(dir)
	if errors.Is(err, dirlock.ErrHeld) {
		return nil, fmt.Errorf("--out %s: another process is training this run (%w): wait for it to end, or choose another --out", dir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	return release, nil
}

// prepareDir creates the run directory, refusing to start a new run over a
// checkpoint unless resuming, or over the files of another run.
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
	var found []string
	for _, name := range trainedArtefacts {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			found = append(found, name)
		}
	}
	if len(found) > 0 {
		return fmt.Errorf("--out %s: holds %s of another run but no checkpoint to resume, expected a new or empty directory (choose another --out, or remove them)",
			dir, strings.Join(found, ", "))
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
