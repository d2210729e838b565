// Package reproduce runs the paper's experiment grids (Table 1: linear-probe
// accuracy of every method at every dominant-class probability; Table 2: the
// memory's class entropy and the clustering of the representations; the
// D-SimCLR ablation of Appendix F.3) at a chosen scale, and reports them
// beside the paper's numbers.
//
// A grid is a list of method variants (a method with optional settings,
// dsimclr:negatives=memory,eps=0), a list of ρmax values and a number of
// seeds; every (variant, ρmax, seed) is one training run followed by its
// evaluation (linear probe, memory statistics, clustering of the test
// features, curves from metrics.jsonl). Runs live in OUT/runs/<run> and are
// shared by every grid that writes into OUT: a grid reuses a run another
// grid trained when their configurations are equal, and refuses to mix
// runs of different configurations under one name. A finished run's
// evaluation is saved beside it (probe.json), so running a grid again
// skips what is done and resumes what was interrupted. Each grid's report
// goes to OUT/<grid> (or elsewhere): report.md, results.json and plots.
package reproduce

import (
	"fmt"
	"slices"
	"strings"
)

// Kind is the layout of a grid's report.
type Kind string

// The report kinds.
const (
	// Table1 reports linear-probe top-1 per variant and ρmax beside the
	// paper's Table 1, and each DUEL variant's gain over its base method.
	Table1 Kind = "table1"
	// Table2 reports the memory's class entropy, the intra-class variance
	// and the inter-class similarity beside the paper's Table 2, with the
	// memory's entropy and age over training.
	Table2 Kind = "table2"
	// Ablation reports linear-probe top-1 per variant beside the paper's
	// Appendix F.3 (negatives and ε of D-SimCLR).
	Ablation Kind = "ablation"
)

// Kinds lists the report kinds.
var Kinds = []Kind{Table1, Table2, Ablation}

// Grid is one experiment: which runs to train and how to evaluate and
// report them.
type Grid struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Kind        Kind   `json:"kind"`
	TrainPreset string `json:"train_preset"` // train.Preset name for every run
	// Overrides are "key=value" training settings (`duelctl train` flag
	// names) applied to every run on top of TrainPreset.
	Overrides []string `json:"overrides,omitempty"`
	// Set are further overrides given on the command line (--set, --steps),
	// applied after Overrides.
	Set []string `json:"set,omitempty"`
	// Methods are variant specs, method[:key=value,...].
	Methods     []string  `json:"methods"`
	RhoMax      []float64 `json:"rho_max"`
	Seeds       int       `json:"seeds"`
	ProbeEpochs int       `json:"probe_epochs"` // linear-probe epochs (Appendix E: 100)
	ProbeLimit  int       `json:"probe_limit"`  // images per split for the probe; 0 = whole splits
	// ClusterLimit is the number of class-balanced test images whose
	// features the clustering measures use (duelctl analyze's --limit);
	// 0 = the whole test split.
	ClusterLimit int `json:"cluster_limit"`
	// Precision is the PrecisionTag of the precisions every run trains and
	// is evaluated in: "" for the reference (float32 products, float32 or
	// TF32 convolutions), "bf16", ...; the runs' directories and the
	// report's end in -Precision when it is not "".
	Precision string `json:"precision,omitempty"`
}

// evaluation returns g's evaluation settings.
func (g *Grid) evaluation() Evaluation {
	return Evaluation{ProbeEpochs: g.ProbeEpochs, ProbeLimit: g.ProbeLimit, ClusterLimit: g.ClusterLimit}
}

// Validate checks a grid after the command line's changes, down to the
// configuration of every run.
func (g *Grid) Validate() error {
	switch {
	case len(g.Methods) == 0:
		return fmt.Errorf("--methods: empty, expected at least one method")
	case !slices.Contains(Kinds, g.Kind):
		return fmt.Errorf("preset %s: kind %q, expected one of %v", g.Name, g.Kind, Kinds)
	case len(g.RhoMax) == 0:
		return fmt.Errorf("--rho: empty, expected at least one value in [0, 1]")
	case g.Seeds < 1:
		return fmt.Errorf("--seeds: got %d, expected an integer >= 1", g.Seeds)
	case g.ProbeEpochs < 1:
		return fmt.Errorf("--probe-epochs: got %d, expected an integer >= 1", g.ProbeEpochs)
	case g.ProbeLimit < 0:
		return fmt.Errorf("--probe-limit: got %d, expected an integer >= 0 (0 = whole splits)", g.ProbeLimit)
	case g.ClusterLimit < 0:
		return fmt.Errorf("--cluster-limit: got %d, expected an integer >= 0 (0 = the whole test split)", g.ClusterLimit)
	}
	if err := checkPrecision(g.Precision); err != nil {
		return err
	}
	for i, r := range g.RhoMax {
		if !(r >= 0 && r <= 1) { // train's --rho-max
			return fmt.Errorf("--rho: got %g, expected values in [0, 1]", r)
		}
		if slices.Contains(g.RhoMax[:i], r) {
			return fmt.Errorf("--rho: got %g twice, expected distinct values", r)
		}
	}
	if _, err := g.overrides(); err != nil {
		return err
	}
	vs, err := parseVariants(g.Methods)
	if err != nil {
		return err
	}
	for _, v := range vs {
		for _, rho := range g.RhoMax {
			if _, err := g.runConfig(v, rho, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// runKey names one run of the grid.
type runKey struct {
	Variant   Variant
	RhoMax    float64
	Seed      int
	Precision string // the grid's PrecisionTag
}

func (k runKey) name() string { return runName(k.Variant, k.RhoMax, k.Seed) + tagSuffix(k.Precision) }

// runs lists the grid's runs seed-major: every (variant, ρmax) of seed 0,
// then of seed 1, ..., so that an interrupted grid has its first seeds
// complete. The grid must be valid.
func (g *Grid) runs() []runKey {
	vs, _ := parseVariants(g.Methods)
	var out []runKey
	for seed := 0; seed < g.Seeds; seed++ {
		for _, v := range vs {
			for _, rho := range g.RhoMax {
				out = append(out, runKey{v, rho, seed, g.Precision})
			}
		}
	}
	return out
}

// dirName is the name of the grid's default report directory: its name,
// then -Precision when that is not "".
func (g *Grid) dirName() string { return g.Name + tagSuffix(g.Precision) }

// variants returns the grid's parsed variants (nil when they do not parse).
func (g *Grid) variants() []Variant {
	vs, _ := parseVariants(g.Methods)
	return vs
}

// settings describes the training settings of every run: the training
// preset and the overrides.
func (g *Grid) settings() string {
	s := "training preset `" + g.TrainPreset + "`"
	if len(g.Overrides) > 0 {
		s += ", overrides `" + strings.Join(g.Overrides, " ") + "`"
	}
	if len(g.Set) > 0 {
		s += ", --set `" + strings.Join(g.Set, " ") + "`"
	}
	return s
}
