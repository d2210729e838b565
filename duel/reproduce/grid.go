// Package reproduce runs the paper's experiment grids (Table 1: linear-probe
// accuracy of every method at every dominant-class probability; Table 2: the
// class entropy of the memory) at a chosen scale, and tabulates them.
//
// A grid is a list of methods, a list of ρmax values and a number of seeds;
// every (method, ρmax, seed) is one training run followed by a linear probe
// of its frozen backbone. Runs live in OUT/runs/<method>-rho<ρ>-seed<s>; a
// finished run's probe result is saved beside it (probe.json), so running the
// same grid again skips what is done and resumes what was interrupted.
package reproduce

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Grid is one experiment: which runs to train and how to evaluate them.
type Grid struct {
	Name        string    `json:"name"`
	Description string    `json:"description"`
	TrainPreset string    `json:"train_preset"` // train.Preset name for every run
	Dataset     string    `json:"dataset"`      // overrides the preset's dataset when set
	Methods     []string  `json:"methods"`
	RhoMax      []float64 `json:"rho_max"`
	Seeds       int       `json:"seeds"`
	Steps       int       `json:"steps"`        // overrides the preset's steps when > 0
	ProbeEpochs int       `json:"probe_epochs"` // linear-probe epochs (Appendix E: 100)
	ProbeLimit  int       `json:"probe_limit"`  // images per split for the probe; 0 = whole splits
}

// paperMethods are the rows of the paper's Table 1, in its order.
var paperMethods = []string{"moco", "simclr", "barlow", "byol", "dmoco", "dsimclr"}

// paperRho are the columns of the paper's Table 1.
var paperRho = []float64{0.1, 0.25, 0.5, 0.75}

// grids is the registry of named grids. It is never modified: Lookup returns copies.
var grids = map[string]Grid{
	"table1-cpu": {
		Description: "Table 1 at CPU scale: 6 methods x rho_max {0.1, 0.25, 0.5, 0.75} on the embedded CIFAR-10 subset, cpu-small training (ResNet-18-w16, 200 steps), 100-epoch linear probe",
		TrainPreset: "cpu-small", Methods: paperMethods, RhoMax: paperRho, Seeds: 1, ProbeEpochs: 100,
	},
	"table1-paper": {
		Description: "Table 1 at the paper's scale (Appendix E.2): CIFAR-10 (duelctl data fetch cifar10), ResNet-50, 160k steps, 3 seeds, 100-epoch linear probe",
		TrainPreset: "paper-cifar10", Dataset: "cifar10", Methods: paperMethods, RhoMax: paperRho, Seeds: 3, ProbeEpochs: 100,
	},
	"table2-cpu": {
		Description: "Table 2 at CPU scale: memory class entropy of MoCo's queue vs D-MoCo's and D-SimCLR's DUEL memory at rho_max 0.75 (embedded CIFAR-10, cpu-small), with their linear probes",
		TrainPreset: "cpu-small", Methods: []string{"moco", "dmoco", "dsimclr"}, RhoMax: []float64{0.75}, Seeds: 1, ProbeEpochs: 100,
	},
	"smoke": {
		Description: "a seconds-long check of the whole pipeline: moco and dmoco at rho_max 0.75, tiny ResNet, 4 steps, 2-epoch probe on 200 images per split",
		TrainPreset: "tiny", Methods: []string{"moco", "dmoco"}, RhoMax: []float64{0.75}, Seeds: 1, ProbeEpochs: 2, ProbeLimit: 200,
	},
}

// Names lists the registered grids in alphabetical order.
func Names() []string {
	names := make([]string, 0, len(grids))
	for n := range grids {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Lookup returns a copy of the named grid.
func Lookup(name string) (Grid, error) {
	g, ok := grids[name]
	if !ok {
		return Grid{}, fmt.Errorf("unknown preset %q (expected one of %s)", name, strings.Join(Names(), ", "))
	}
	g.Name = name
	g.Methods = slices.Clone(g.Methods)
	g.RhoMax = slices.Clone(g.RhoMax)
	return g, nil
}

// Validate checks a grid after overrides.
func (g *Grid) Validate() error {
	switch {
	case len(g.Methods) == 0:
		return fmt.Errorf("--methods: empty, expected at least one method")
	case len(g.RhoMax) == 0:
		return fmt.Errorf("--rho: empty, expected at least one value in (0, 1)")
	case g.Seeds < 1:
		return fmt.Errorf("--seeds: got %d, expected an integer >= 1", g.Seeds)
	case g.Steps < 0:
		return fmt.Errorf("--steps: got %d, expected an integer >= 0 (0 = the preset's)", g.Steps)
	case g.ProbeEpochs < 1:
		return fmt.Errorf("--probe-epochs: got %d, expected an integer >= 1", g.ProbeEpochs)
	case g.ProbeLimit < 0:
		return fmt.Errorf("--probe-limit: got %d, expected an integer >= 0 (0 = whole splits)", g.ProbeLimit)
	}
	for _, r := range g.RhoMax {
		if !(r > 0 && r < 1) {
			return fmt.Errorf("--rho: got %g, expected values in (0, 1)", r)
		}
	}
	return nil
}

// runName is the directory name of one run of the grid.
func runName(method string, rho float64, seed int) string {
	return fmt.Sprintf("%s-rho%g-seed%d", method, rho, seed)
}
