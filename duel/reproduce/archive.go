package reproduce

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/duel-ssl/duel/duel/train"
	"github.com/duel-ssl/duel/internal/atomicfile"
)

// archiveDir is the report's copy of its runs' settings and measures.
const archiveDir = "runs"

// archiveFiles are the files archiveRuns copies from each run directory,
// and the only ones a folder of the archive holds.
var archiveFiles = []string{train.ConfigFile, probeFile}

// archiveRuns copies the config.json and probe.json of every finished run
// into dir/runs/<run>/: a committed report then holds each run's settings
// and evaluation, and copying that folder into another OUT/runs lets
// duelctl reproduce go on with the grid there (a run directory holding
// both files counts as finished). Results whose run directory no longer
// exists are left out. It then removes the archived runs of other grids
// (see pruneArchive): planned names the grid's runs, reported or not.
func archiveRuns(dir string, runs []RunResult, planned []string) error {
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
		for _, f := range archiveFiles {
			b, err := os.ReadFile(filepath.Join(r.Dir, f))
			if err != nil {
				return fmt.Errorf("run %s: %w (expected a finished run's %s)", name, err, f)
			}
			if err := atomicfile.WriteFile(filepath.Join(dst, f), b); err != nil {
				return err
			}
		}
	}
	return pruneArchive(dir, runs, planned)
}

// pruneArchive removes from dir/runs the archived runs that are neither
// among runs (the runs reported) nor among planned (the grid's runs), so
// that a report directory reused for another grid does not keep the
// archived runs of the earlier one beside this report. Only folders that
// look as archiveRuns writes them (holding config.json, probe.json or both
// and nothing else) are removed; anything else there is left as it is.
//
// The archive mirrors the grid whose report it is, not only the runs
// finished so far: a partial report (an interrupted grid, --report-only
// before every run is finished or with runs left out for their stale
// evaluation) keeps the archived folders of its planned runs. Those
// folders may be the only copy of a run's results (a committed report
// whose grid goes on from a fresh OUT), and they are this grid's: the run,
// once reported, overwrites its folder, while removing it would lose a
// result the grid will report.
//
// Nothing is removed when dir/runs is where the runs live (--report OUT:
// dir/runs is OUT/runs, shared by every grid, where a run copied from an
// archive looks like an archived run), nor when no run is reported, as
// then nothing tells whether it is.
func pruneArchive(dir string, runs []RunResult, planned []string) error {
	root := filepath.Join(dir, archiveDir)
	fi, err := os.Stat(root)
	if errors.Is(err, fs.ErrNotExist) || len(runs) == 0 {
		return nil
	}
	if err != nil {
		return fmt.Errorf("--report %s: %w", dir, err)
	}
	keep := map[string]bool{}
	for _, name := range planned {
		keep[name] = true
	}
	for _, r := range runs {
		keep[filepath.Base(r.Dir)] = true
		if pi, err := os.Stat(filepath.Dir(r.Dir)); err == nil && os.SameFile(pi, fi) {
			return nil // dir/runs is the runs' own directory, not an archive
		}
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return fmt.Errorf("--report %s: %w", dir, err)
	}
	for _, e := range entries {
		if keep[e.Name()] || !e.IsDir() {
			continue
		}
		path := filepath.Join(root, e.Name())
		files, ok, err := archivedRun(path)
		if err != nil {
			return fmt.Errorf("--report %s: %w", dir, err)
		}
		if !ok {
			continue
		}
		for _, f := range files {
			if err := os.Remove(filepath.Join(path, f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("removing %s, an archived run not of this report: %w", path, err)
			}
		}
		// os.Remove, not os.RemoveAll: a file put there meanwhile stays.
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("removing %s, an archived run not of this report: %w", path, err)
		}
	}
	return nil
}

// archivedRun says whether the directory path looks like a run archived by
// archiveRuns: it holds one or both of archiveFiles, as regular files, and
// nothing else. It returns the files it holds.
func archivedRun(path string) ([]string, bool, error) {
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, false, err
	}
	var files []string
	for _, e := range entries {
		if !e.Type().IsRegular() || !slices.Contains(archiveFiles, e.Name()) {
			return nil, false, nil
		}
		files = append(files, e.Name())
	}
	return files, len(files) > 0, nil
}
