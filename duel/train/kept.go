package train

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// KeptDir is the directory of a run that holds the checkpoints kept by
// --keep-checkpoints, one subdirectory step-NNNNNNN per kept step with the
// model, the memory and state.json (not the optimizer): every checkpoint
// written while the setting is on, and step 0 (the model before training)
// when the run starts, or resumes from step 0, with it.
const KeptDir = "checkpoints"

// KeptName is the subdirectory of KeptDir for step: step-NNNNNNN, the
// step zero-padded to 7 digits (duelctl analyze --step names its output
// directories alike).
func KeptName(step int) string { return fmt.Sprintf("step-%07d", step) }

// keepCheckpoint makes the current checkpoint of the run in dir (just
// written for step) survive the next one: its files, but the optimizer's,
// are hard-linked (copied where links fail) into checkpoints/step-NNNNNNN,
// built aside and renamed into place.
func keepCheckpoint(dir string, step int) error {
	return keepFrom(filepath.Join(dir, CheckpointDir), dir, step)
}

// keepMissed keeps the checkpoint a run that keeps checkpoints (some are
// kept already) resumes from, at step, when its kept copy is missing: a
// kill between a save and its keep, or between the save's two renames
// (the checkpoint is then checkpoint.old/), left it out.
func keepMissed(dir string, step int) error {
	kept, err := KeptSteps(dir)
	if err != nil || len(kept) == 0 || slices.Contains(kept, step) {
		return err
	}
	src, err := checkpointPath(dir)
	if err != nil {
		return err
	}
	return keepFrom(src, dir, step)
}

// keepFrom hard-links (or copies) the checkpoint files in src but the
// optimizer's into the run dir's checkpoints/step-NNNNNNN for step.
func keepFrom(src, dir string, step int) error {
	root := filepath.Join(dir, KeptDir)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	dst := filepath.Join(root, KeptName(step))
	tmp := dst + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return err
	}
	for _, name := range []string{ModelFile, memoryFile, stateFile} {
		from, to := filepath.Join(src, name), filepath.Join(tmp, name)
		if err := os.Link(from, to); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // no memory
			}
			if err := copyFile(from, to); err != nil {
				return err
			}
		}
	}
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

// copyFile copies from into a new file to, streaming (a memory.bin of
// millions of rows is not read whole), for file systems without hard
// links. The copy lands in keepFrom's temporary directory, renamed into
// place only once every file is complete.
func copyFile(from, to string) (err error) {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := dst.Close(); err == nil {
			err = cerr
		}
	}()
	if _, err := io.Copy(dst, src); err != nil {
		return fmt.Errorf("copying %s to %s: %w", from, to, err)
	}
	return dst.Sync()
}

// KeptSteps returns the steps of the checkpoints kept in the run dir, in
// increasing order (none without --keep-checkpoints).
func KeptSteps(dir string) ([]int, error) {
	entries, err := os.ReadDir(filepath.Join(dir, KeptDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var steps []int
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || !strings.HasPrefix(name, "step-") || strings.HasSuffix(name, ".tmp") {
			continue
		}
		s, err := strconv.Atoi(strings.TrimPrefix(name, "step-"))
		if err != nil || s < 0 {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, KeptDir, name, stateFile)); err == nil {
			steps = append(steps, s)
		}
	}
	slices.Sort(steps)
	return steps, nil
}
