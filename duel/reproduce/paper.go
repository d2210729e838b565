package reproduce

import (
	"fmt"
	"slices"
)

// The paper's numbers (linear-probe top-1 in %, entropy in nats), for the
// reports to show beside ours. Only the plain method names have them.

// pm is a mean ± standard deviation over the paper's 3 seeds.
type pm struct{ Mean, Std float64 }

// paperTable1 is Table 1: linear probing top-1 (%) at ρmax 0.1, 0.25, 0.5,
// 0.75 (paperRho), by dataset and method.
var paperTable1 = map[string]map[string][4]pm{
	"cifar10": {
		"moco":    {{80.99, 1.85}, {82.50, 1.12}, {76.54, 1.97}, {70.12, 1.40}},
		"simclr":  {{82.28, 1.26}, {78.90, 1.60}, {76.67, 1.96}, {72.81, 1.39}},
		"barlow":  {{51.72, 0.30}, {51.59, 1.44}, {54.89, 0.93}, {53.54, 0.99}},
		"byol":    {{67.87, 3.26}, {69.32, 3.52}, {67.50, 1.63}, {60.40, 2.40}},
		"dmoco":   {{82.58, 3.48}, {81.40, 2.24}, {80.53, 3.04}, {77.99, 1.71}},
		"dsimclr": {{82.82, 1.10}, {82.37, 1.53}, {79.56, 2.61}, {75.17, 3.49}},
	},
	"stl10": {
		"moco":    {{79.59, 6.57}, {79.32, 1.02}, {77.28, 2.68}, {75.34, 1.11}},
		"simclr":  {{70.80, 1.21}, {69.59, 0.50}, {67.20, 1.10}, {68.75, 2.08}},
		"barlow":  {{77.48, 3.10}, {78.21, 2.82}, {72.47, 0.56}, {71.98, 2.12}},
		"byol":    {{68.42, 0.80}, {64.04, 1.41}, {58.78, 3.49}, {61.82, 2.77}},
		"dmoco":   {{79.20, 3.56}, {76.03, 2.06}, {78.65, 2.23}, {77.23, 0.48}},
		"dsimclr": {{75.89, 2.90}, {72.68, 3.53}, {78.23, 4.38}, {74.13, 1.04}},
	},
}

// paperDataset maps a run's dataset to the paper's column it compares with
// (the embedded default set is a CIFAR-10 subset).
func paperDataset(dataset string) (key, name string, ok bool) {
	switch dataset {
	case "cifar10":
		return "cifar10", "CIFAR-10", true
	case "default":
		return "cifar10", "CIFAR-10", true
	case "stl10":
		return "stl10", "STL-10", true
	}
	return "", "", false
}

// paperTop1 returns Table 1's value of a plain method at rho.
func paperTop1(dataset string, v Variant, rho float64) (pm, bool) {
	key, _, ok := paperDataset(dataset)
	i := slices.Index(paperRho, rho)
	if !ok || !v.Plain() || i < 0 {
		return pm{}, false
	}
	row, ok := paperTable1[key][v.Method]
	return row[i], ok
}

// paperTable2Rho are the columns of Table 2.
var paperTable2Rho = []float64{0.1, 0.5, 0.75}

// paperTable2 is Table 2 (CIFAR-10): by measure and method, at
// paperTable2Rho.
var paperTable2 = map[string]map[string][3]float64{
	"memory_class_entropy": {
		"moco":  {2.2991, 1.8394, 1.0523},
		"dmoco": {2.2988, 2.1654, 1.8306},
	},
	"intra_class_variance": {
		"moco":  {0.7879, 0.7853, 0.7689},
		"dmoco": {0.7750, 0.7633, 0.7699},
	},
	"inter_class_similarity": {
		"moco":  {-0.1005, -0.0534, 0.0723},
		"dmoco": {-0.1033, -0.0846, -0.0513},
	},
}

// paperT2 returns Table 2's value of measure for a plain method at rho.
func paperT2(dataset, measure string, v Variant, rho float64) (float64, bool) {
	key, _, ok := paperDataset(dataset)
	i := slices.Index(paperTable2Rho, rho)
	if !ok || key != "cifar10" || !v.Plain() || i < 0 {
		return 0, false
	}
	row, ok := paperTable2[measure][v.Method]
	return row[i], ok
}

// f3Row is a row of Appendix F.3's ablation (CIFAR-10, at paperRho).
type f3Row struct {
	Method, Negatives string
	Eps               float64
	Label             string
	Top1              [4]pm
}

// paperF3 is Appendix F.3: D-SimCLR's negatives and ε.
var paperF3 = []f3Row{
	{"simclr", "batch", 1, "SimCLR (batch only, ε = 1)", [4]pm{{82.28, 1.26}, {78.90, 1.60}, {76.67, 1.96}, {72.81, 1.39}}},
	{"dsimclr", "memory", 0, "D-SimCLR (memory only, ε = 0)", [4]pm{{71.26, 1.77}, {71.10, 0.28}, {67.42, 1.65}, {60.27, 1.07}}},
	{"dsimclr", "mixed", 0, "D-SimCLR (mixed, ε = 0)", [4]pm{{81.00, 1.09}, {80.43, 2.08}, {77.93, 1.18}, {74.85, 3.25}}},
	{"dsimclr", "mixed", 1, "D-SimCLR (mixed, ε = 1)", [4]pm{{82.82, 1.10}, {82.37, 1.53}, {79.56, 2.61}, {75.17, 3.49}}},
}

// paperF3Row returns the F.3 row of a variant whose only settings are
// negatives and eps, matched on the method and the effective negatives and
// ε of its runs.
func paperF3Row(dataset string, v Variant, negatives string, eps float64) (f3Row, bool) {
	if key, _, ok := paperDataset(dataset); !ok || key != "cifar10" {
		return f3Row{}, false
	}
	for _, o := range v.Settings {
		if o.Key != "negatives" && o.Key != "eps" {
			return f3Row{}, false
		}
	}
	for _, row := range paperF3 {
		if row.Method == v.Method && row.Negatives == negatives && row.Eps == eps {
			return row, true
		}
	}
	return f3Row{}, false
}

// f3Top1 returns the row's value at rho.
func (row f3Row) top1(rho float64) (pm, bool) {
	i := slices.Index(paperRho, rho)
	if i < 0 {
		return pm{}, false
	}
	return row.Top1[i], true
}

// String formats mean ± std.
func (p pm) String() string { return fmt.Sprintf("%.2f ± %.2f", p.Mean, p.Std) }
