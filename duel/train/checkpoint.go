package train

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/duel/ssl"
	"github.com/duel-ssl/duel/internal/atomicfile"
	"github.com/duel-ssl/duel/nn/optim"
	"github.com/duel-ssl/duel/nn/safetensors"
	"github.com/duel-ssl/duel/tensor"
)

// Run directory layout.
const (
	ConfigFile     = "config.json"
	MetricsFile    = "metrics.jsonl"
	ModelFile      = "model.safetensors"
	CheckpointDir  = "checkpoint"
	stateFile      = "state.json"
	optimizerFile  = "optimizer.safetensors"
	memoryFile     = "memory.bin"
	checkpointTmp  = CheckpointDir + ".tmp"
	checkpointPrev = CheckpointDir + ".old"
)

// State is the small part of a checkpoint: where training stands.
// Everything else a run needs to continue is a pure function of the step and
// the configuration (the sampler, the augmentations and the schedule draw
// their random numbers from (seed, step, ...)), or is in the checkpoint's
// other files: the model, the optimizer's moments and the memory (rows, ids,
// labels, steps and its policy's RNG).
type State struct {
	Step      int     `json:"step"` // completed optimisation steps
	Loss      float64 `json:"loss"` // loss of the last step (0 before any)
	Method    string  `json:"method"`
	Optimizer string  `json:"optimizer"`
}

// saveCheckpoint writes the checkpoint of step into dir/checkpoint, then
// model.safetensors; both files' metadata hold the method and the step,
// plus meta (modelMetadata: the encoder's arch and stem). The checkpoint directory is built aside and swapped in
// with renames, so a kill at any moment leaves the previous checkpoint or
// the new one, complete.
func saveCheckpoint(dir string, st State, m ssl.Method, opt optim.Optimizer, meta map[string]string) error {
	tmp := filepath.Join(dir, checkpointTmp)
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", tmp, err)
	}
	model, err := modelTensors(m)
	if err != nil {
		return err
	}
	if name, n := nonFinite(model); n > 0 {
		os.RemoveAll(tmp)
		return fmt.Errorf("checkpoint of step %d not saved, the last one is kept: the model's %s holds %d %w", st.Step, name, n, ErrDiverged)
	}
	meta = maps.Clone(meta)
	if meta == nil {
		meta = map[string]string{}
	}
	meta["format"], meta["method"], meta["step"] = "pt", m.Name(), fmt.Sprint(st.Step)
	if err := safetensors.Write(filepath.Join(tmp, ModelFile), model, meta); err != nil {
		return err
	}
	if err := safetensors.Write(filepath.Join(tmp, optimizerFile), optimizerTensors(opt), nil); err != nil {
		return err
	}
	if mem := m.Memory(); mem != nil {
		// Streamed: the memory is encoded a piece at a time, never a
		// second copy of it (K x --proj-dim floats) in memory.
		if err := atomicfile.Write(filepath.Join(tmp, memoryFile), func(w io.Writer) error {
			bw := bufio.NewWriter(w) // WriteTo's pieces of 64 KiB go straight through
			if _, err := mem.WriteTo(bw); err != nil {
				return err
			}
			return bw.Flush()
		}); err != nil {
			return err
		}
	}
	if err := atomicfile.WriteJSON(filepath.Join(tmp, stateFile), st); err != nil {
		return err
	}
	cur, prev := filepath.Join(dir, CheckpointDir), filepath.Join(dir, checkpointPrev)
	if err := os.RemoveAll(prev); err != nil {
		return err
	}
	if err := os.Rename(cur, prev); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := os.Rename(tmp, cur); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := os.RemoveAll(prev); err != nil {
		return err
	}
	return safetensors.Write(filepath.Join(dir, ModelFile), model, meta)
}

// modelMetadata is what model.safetensors says of the encoder beyond its
// tensors, for the tools that load it: its arch and its stem ("cifar": a
// 3x3 conv1 and no max-pool, which torchvision's ResNet takes once its
// conv1 and maxpool are replaced; "imagenet": torchvision's own).
func modelMetadata(c *Config) map[string]string {
	stem := c.Stem
	if stem == "" {
		stem = "cifar"
	}
	return map[string]string{"arch": c.Arch, "stem": stem}
}

// HasCheckpoint reports whether dir holds a run's checkpoint to resume
// (checkpoint/, or checkpoint.old/ when a save was interrupted between its
// two renames).
func HasCheckpoint(dir string) bool {
	_, err := checkpointPath(dir)
	return err == nil
}

// checkpointPath returns the directory of the latest complete checkpoint:
// checkpoint/, or checkpoint.old/ when a save was interrupted between its
// two renames.
func checkpointPath(dir string) (string, error) {
	var unreadable error // a checkpoint there that cannot be read (permissions, ...): not "no checkpoint"
	for _, name := range []string{CheckpointDir, checkpointPrev} {
		p := filepath.Join(dir, name)
		_, err := os.Stat(filepath.Join(p, stateFile))
		if err == nil {
			return p, nil
		}
		if unreadable == nil && !errors.Is(err, fs.ErrNotExist) {
			unreadable = err
		}
	}
	if unreadable != nil {
		return "", damaged(fmt.Errorf("%s: checkpoint unreadable: %w", dir, unreadable))
	}
	return "", fmt.Errorf("%s: no checkpoint (expected %s/%s)", dir, CheckpointDir, stateFile)
}

// readState reads a checkpoint's state.json.
func readState(ckpt string) (State, error) {
	var st State
	path := filepath.Join(ckpt, stateFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return st, damaged(err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, damaged(fmt.Errorf("%s: %w", path, err))
	}
	if st.Step < 0 {
		return st, fmt.Errorf("%s: step %d, expected >= 0", path, st.Step)
	}
	return st, nil
}

// damaged says what a checkpoint file that cannot be read or parsed
// should have been, and what to do.
func damaged(err error) error {
	return fmt.Errorf("%w (expected a complete checkpoint as duelctl train writes it: %s, %s, %s and, for a method with a memory, %s)",
		err, stateFile, ModelFile, optimizerFile, memoryFile)
}

// loadCheckpoint restores m (and opt, when not nil) from the checkpoint
// directory ckpt.
func loadCheckpoint(ckpt string, m ssl.Method, opt optim.Optimizer) (State, error) {
	st, err := readState(ckpt)
	if err != nil {
		return st, err
	}
	if st.Method != m.Name() {
		return st, fmt.Errorf("%s: checkpoint of method %q, the configuration says %q", ckpt, st.Method, m.Name())
	}
	mpath := filepath.Join(ckpt, ModelFile)
	f, err := safetensors.Read(mpath)
	if err != nil {
		return st, damaged(err)
	}
	if err := loadModel(m, f, mpath); err != nil {
		return st, err
	}
	if opt != nil {
		opath := filepath.Join(ckpt, optimizerFile)
		of, err := safetensors.Read(opath)
		if err != nil {
			return st, damaged(err)
		}
		state := map[string]*tensor.Tensor{}
		for _, t := range of.Tensors {
			if state[t.Name], err = t.ToTensor(); err != nil {
				return st, fmt.Errorf("%s: %w", opath, err)
			}
		}
		if err := opt.LoadStateDict(state); err != nil {
			return st, fmt.Errorf("%s: %w", opath, err)
		}
	}
	if mem := m.Memory(); mem != nil {
		path := filepath.Join(ckpt, memoryFile)
		want := memorySettings(mem)
		if err := loadMemory(mem, path); err != nil {
			return st, err
		}
		if err := want.check(memorySettings(mem), path); err != nil {
			return st, err
		}
	}
	return st, nil
}

// loadMemory replaces mem with the memory the checkpoint file path holds,
// streamed from the file into the memory's rows (the file's bytes are
// never held whole beside them).
func loadMemory(mem *memory.Memory, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return damaged(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return damaged(err)
	}
	// The header's small reads are buffered; the rows' pieces of 64 KiB
	// go straight from the file.
	if err := mem.ReadCheckpoint(bufio.NewReader(f), fi.Size()); err != nil {
		return damaged(fmt.Errorf("%s: %w", path, err))
	}
	return nil
}

// memoryConfig is what a run's config.json sets of its memory and its
// checkpoint's memory.bin records too.
type memoryConfig struct {
	size, maxAge int
	policy       string
	admission    string // "" for a policy without one (memory.Admitting)
	safe         bool
}

// memorySettings returns mem's memoryConfig.
func memorySettings(mem *memory.Memory) memoryConfig {
	c := memoryConfig{size: mem.Size(), maxAge: mem.MaxAge(), policy: mem.Policy().Name(), safe: mem.SafeUpdate()}
	if a, ok := mem.Policy().(memory.Admitting); ok {
		c.admission = a.AdmissionMode().String()
	}
	return c
}

// check compares the memory config.json describes (want, the method's
// memory as the configuration built it) with the one the checkpoint's
// memory.bin at path holds (got): a config.json edited by hand after the
// run trained must not load a memory that silently disagrees with it.
func (want memoryConfig) check(got memoryConfig, path string) error {
	var key, found string
	var gotV, wantV any
	switch {
	case got.size != want.size:
		key, gotV, wantV, found = "memory_size", got.size, want.size, fmt.Sprintf("%d rows", got.size)
	case got.policy != want.policy:
		key, gotV, wantV = "policy", strconv.Quote(got.policy), strconv.Quote(want.policy)
		found = "policy " + gotV.(string)
	case got.admission != want.admission:
		key, gotV, wantV = "admission", strconv.Quote(got.admission), strconv.Quote(want.admission)
		found = "admission " + gotV.(string)
	case got.maxAge != want.maxAge:
		key, gotV, wantV, found = "max_age", got.maxAge, want.maxAge, fmt.Sprintf("a maximum row age of %d", got.maxAge)
	case got.safe != want.safe:
		key, gotV, wantV, found = "safe_update", got.safe, want.safe, fmt.Sprintf("the safe update %s", map[bool]string{true: "on", false: "off"}[got.safe])
	default:
		return nil
	}
	config := filepath.Join(runDirOf(filepath.Dir(path)), ConfigFile)
	return fmt.Errorf("%s holds a memory of %s, but %s says %s %v: expected them to agree "+
		"(%s cannot change after training; was %s edited by hand? put back %s %v, or train a new run)",
		path, found, config, key, wantV, key, ConfigFile, key, gotV)
}

// runDirOf returns the run directory of the checkpoint directory ckpt:
// RUN/checkpoint, RUN/checkpoint.old or RUN/checkpoints/step-N.
func runDirOf(ckpt string) string {
	dir := filepath.Dir(ckpt)
	if filepath.Base(dir) == KeptDir {
		dir = filepath.Dir(dir)
	}
	return dir
}

// optimizerTensors returns the optimizer's state sorted by name.
func optimizerTensors(opt optim.Optimizer) []safetensors.Tensor {
	sd := opt.StateDict()
	names := make([]string, 0, len(sd))
	for n := range sd {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]safetensors.Tensor, 0, len(names))
	for _, n := range names {
		out = append(out, safetensors.FromTensor(n, sd[n]))
	}
	return out
}
