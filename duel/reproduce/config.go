package reproduce

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/duel-ssl/duel/duel/train"
)

// source is an override with where it came from, for error messages.
type source struct {
	o    Override
	from string
}

// overrides parses Overrides then Set.
func (g *Grid) overrides() ([]source, error) {
	var out []source
	for _, s := range g.Overrides {
		o, err := ParseOverride(s)
		if err != nil {
			return nil, fmt.Errorf("preset %s: override %q: %w", g.Name, s, err)
		}
		out = append(out, source{o, fmt.Sprintf("preset %s: override %q", g.Name, s)})
	}
	for _, s := range g.Set {
		o, err := ParseOverride(s)
		if err != nil {
			return nil, fmt.Errorf("--set %q: %w", s, err)
		}
		out = append(out, source{o, fmt.Sprintf("--set %q", s)})
	}
	return out, nil
}

// runConfig builds the training configuration of one run: the training
// preset for the variant's method, the grid's overrides, the variant's
// settings, then the grid's imbalance profile, ρmax and seed.
func (g *Grid) runConfig(v Variant, rho float64, seed int) (train.Config, error) {
	cfg, err := train.Preset(g.TrainPreset, v.Method)
	if err != nil {
		return train.Config{}, fmt.Errorf("preset %s: training preset for %s: %w", g.Name, v, err)
	}
	ovs, err := g.overrides()
	if err != nil {
		return train.Config{}, err
	}
	for _, s := range ovs {
		if err := train.SetFlag(&cfg, s.o.Key, s.o.Value); err != nil {
			return train.Config{}, fmt.Errorf("%s: %w", s.from, err)
		}
	}
	for _, o := range v.Settings {
		if err := train.SetFlag(&cfg, o.Key, o.Value); err != nil {
			return train.Config{}, fmt.Errorf("--methods: variant %q: %w", v, err)
		}
	}
	cfg.Imbalance, cfg.RhoMax, cfg.Seed = "dominant", rho, uint64(seed)
	// Whether the run fits this machine's memory depends on the device it
	// trains on: Run checks it before training (a report is written on
	// any machine).
	if err := cfg.ValidateSettings(); err != nil {
		return train.Config{}, fmt.Errorf("run %s (%s, variant %s): %w", runName(v, rho, seed), g.settings(), v, err)
	}
	// A grid-wide setting (the preset's overrides, --set) that this run's
	// method or policy never reads stays at the preset's value (e.g.
	// --set memory-size=64 for simclr); the variant's own are refused.
	for _, in := range train.Inapplicables(&cfg) {
		if slices.ContainsFunc(v.Settings, func(o Override) bool { return o.Key == in.Flag }) {
			return train.Config{}, fmt.Errorf("run %s (%s, variant %s): %w", runName(v, rho, seed), g.settings(), v, in)
		}
		if err := train.ResetInapplicable(&cfg, in); err != nil {
			return train.Config{}, err
		}
	}
	return cfg, nil
}

// effective returns the configuration train.Train writes into config.json
// for cfg: a warm-up longer than the run is cut to a tenth of it.
func effective(cfg train.Config) train.Config {
	if cfg.WarmupSteps >= cfg.Steps && cfg.Steps > 0 {
		cfg.WarmupSteps = cfg.Steps / 10
	}
	return cfg
}

// ignoredFields are config.json fields that do not change a run's results:
// where the dataset is read from (a cache may move; but a folder dataset's
// directory is the dataset itself, compared by sameFolder), how many
// goroutines augment it, and where its latest segment ran (not a setting
// of the grid: a run may go on on another device; its precision is in the
// run's name, checked apart).
var ignoredFields = map[string]bool{"data": true, "workers": true, "ran": true}

// checkConfig fails when dir holds a run (config.json) whose settings differ
// from want's, or whose latest segment computed in another precision than
// the grid's (its PrecisionTag, precision), so that runs of different
// settings are never mixed under one name. A directory without
// config.json passes.
func checkConfig(dir string, want train.Config, precision string) error {
	path := filepath.Join(dir, train.ConfigFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	// Through train.Config, as train.ReadConfig loads it: a field the file
	// lacks (written before the field existed) takes the value such runs
	// trained with (train.DecodeBase), else zero.
	haveCfg := train.DecodeBase()
	if err := json.Unmarshal(b, &haveCfg); err != nil {
		return fmt.Errorf("%s: %w (expected the config.json of a run)", path, err)
	}
	have, err := jsonFields(haveCfg)
	if err != nil {
		return err
	}
	wantMap, err := jsonFields(effective(want))
	if err != nil {
		return err
	}
	var diffs []string
	keys := make([]string, 0, len(wantMap))
	for k := range wantMap {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if ignoredFields[k] || reflect.DeepEqual(have[k], wantMap[k]) {
			continue
		}
		diffs = append(diffs, fmt.Sprintf("%s %v, expected %v", strings.ReplaceAll(k, "_", "-"), show(have[k]), show(wantMap[k])))
	}
	if want.Dataset == "folder" && !sameFolder(haveCfg.Data, want.Data) {
		diffs = append(diffs, fmt.Sprintf("data %s, expected %s (the folder dataset)", show(haveCfg.Data), show(want.Data)))
	}
	if r := haveCfg.Ran; r != nil && PrecisionTag(r.Precision, r.ConvPrecision) != precision {
		diffs = append(diffs, fmt.Sprintf("computed with %s, expected %s", precisionText(r.Precision, r.ConvPrecision), tagText(precision)))
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%s: the run there has other settings than this grid's (%s): delete %s to train it again with this grid's settings, or choose another --out",
			path, strings.Join(diffs, "; "), dir)
	}
	return nil
}

// sameFolder says whether have, a run's data directory (train writes it
// absolute), is want, as the grid names it (perhaps relative).
func sameFolder(have, want string) bool {
	if abs, err := filepath.Abs(want); err == nil {
		want = abs
	}
	return filepath.Clean(have) == want
}

// jsonFields returns the JSON fields of cfg by name.
func jsonFields(cfg train.Config) (map[string]any, error) {
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(b, &m)
}

// show formats a JSON value for an error message.
func show(v any) string {
	if v == nil {
		return "(none)"
	}
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(v)
}
