package reproduce

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// cpuProtocol is the training protocol of every CPU-scale grid (table1-cpu,
// table2-cpu, f3-cpu), on top of the cpu-small training preset: full
// CIFAR-10, ResNet-18 at width 16 with the CIFAR stem, batch 64, 2000 steps
// (Adam 1e-3, cosine), memory 2048, a kNN monitor every 500 steps on a bank
// of 10,000 train images and 2,000 test images, every checkpoint kept.
// The step count was chosen by measurement (MoCo at rho_max 0.75, README
// "Reproducing the paper's tables"): by step 2000 the kNN accuracy is
// past its knee, and a cell of the slowest method (D-SimCLR) stays short
// on 2 cores. The grids' descriptions are generated from this list.
var cpuProtocol = []string{
	"dataset=cifar10", "arch=resnet18-w16", "batch=64", "steps=2000",
	"knn-every=500", "knn-train=10000", "knn-test=2000", "knn-k=200",
	"checkpoint-every=500", "keep-checkpoints=true", "log-every=50",
}

// dmocoRemedy is the D-MoCo variant with the remedy to its collapse at CPU
// scale that the measurements support (docs/duel-readings.md, "Stale rows"),
// run beside the paper's D-MoCo.
const dmocoRemedy = "dmoco:max-age=64"

// cpuSeeds is the number of seeds of the CPU-scale grids.
const cpuSeeds = 3

// paperMethods are the rows of the paper's Table 1, in its order.
var paperMethods = []string{"moco", "simclr", "barlow", "byol", "dmoco", "dsimclr"}

// paperRho are the columns of the paper's Table 1.
var paperRho = []float64{0.1, 0.25, 0.5, 0.75}

// cpuGrid is a CPU-scale grid: cpu-small with cpuProtocol, cpuSeeds seeds
// and the 100-epoch linear probe on whole splits.
func cpuGrid(kind Kind, what string, methods []string, rho []float64) Grid {
	return Grid{
		Description: fmt.Sprintf("%s; %d seeds; training preset cpu-small with %s (CIFAR-10: duelctl data fetch cifar10); 100-epoch linear probe on whole splits",
			what, cpuSeeds, strings.Join(cpuProtocol, " ")),
		Kind: kind, TrainPreset: "cpu-small", Overrides: cpuProtocol,
		Methods: methods, RhoMax: rho, Seeds: cpuSeeds, ProbeEpochs: 100, ClusterLimit: clusterLimit,
	}
}

// grids is the registry of named grids. It is never modified: Lookup
// returns copies.
var grids = map[string]Grid{
	"table1-cpu": cpuGrid(Table1, "Table 1 at CPU scale: moco, dmoco, "+dmocoRemedy+", simclr, dsimclr x rho_max {0.1, 0.25, 0.5, 0.75}",
		[]string{"moco", "dmoco", dmocoRemedy, "simclr", "dsimclr"}, paperRho),
	"table2-cpu": cpuGrid(Table2, "Table 2 at CPU scale: memory class entropy, intra-class variance and inter-class similarity of moco, dmoco, "+dmocoRemedy+", dsimclr x rho_max {0.1, 0.5, 0.75}",
		[]string{"moco", "dmoco", dmocoRemedy, "dsimclr"}, []float64{0.1, 0.5, 0.75}),
	"f3-cpu": cpuGrid(Ablation, "Appendix F.3 at CPU scale: D-SimCLR's negatives and eps (simclr; dsimclr memory-only eps 0, mixed eps 0, mixed eps 1) at rho_max 0.75",
		[]string{"simclr", "dsimclr:negatives=memory,eps=0", "dsimclr:negatives=mixed,eps=0", "dsimclr"}, []float64{0.75}),
	"table1-paper": {
		Description: "Table 1 at the paper's scale (Appendix E.2): CIFAR-10 (duelctl data fetch cifar10), ResNet-50, 160k steps, 3 seeds, 100-epoch linear probe",
		Kind:        Table1, TrainPreset: "paper-cifar10", Methods: paperMethods, RhoMax: paperRho, Seeds: 3, ProbeEpochs: 100, ClusterLimit: clusterLimit,
	},
	"smoke": {
		Description: "a seconds-long check of the whole pipeline: moco and dmoco at rho_max 0.75, tiny ResNet, 4 steps with a kNN monitor every 2, a memory of 32 rows (full after 2 steps: the policies decide in the last 2), 2-epoch probe on 200 images per split",
		Kind:        Table1, TrainPreset: "tiny", Overrides: []string{"knn-every=2", "memory-size=32"},
		Methods: []string{"moco", "dmoco"}, RhoMax: []float64{0.75}, Seeds: 1, ProbeEpochs: 2, ProbeLimit: 200, ClusterLimit: clusterLimit,
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
	g.Overrides = slices.Clone(g.Overrides)
	g.Set = slices.Clone(g.Set)
	g.Methods = slices.Clone(g.Methods)
	g.RhoMax = slices.Clone(g.RhoMax)
	return g, nil
}
