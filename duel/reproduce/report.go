package reproduce

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/duel-ssl/duel/internal/atomicfile"
)

// Report is a grid's runs and their summary per (method, ρmax).
type Report struct {
	Grid  Grid        `json:"grid"`
	Runs  []RunResult `json:"runs"`
	Cells []Cell      `json:"cells"`
}

// Cell is the mean and sample standard deviation over the seeds of one
// (method, ρmax), as in the paper's tables.
type Cell struct {
	Method                 string   `json:"method"`
	RhoMax                 float64  `json:"rho_max"`
	Seeds                  int      `json:"seeds"`
	Top1Mean               float64  `json:"top1_mean"`
	Top1Std                float64  `json:"top1_std"`
	MemoryClassEntropyMean *float64 `json:"memory_class_entropy_mean,omitempty"`
}

// summarise fills Cells from Runs, in the grid's order.
func (r *Report) summarise() {
	r.Cells = r.Cells[:0]
	for _, m := range r.Grid.Methods {
		for _, rho := range r.Grid.RhoMax {
			var top1, ent []float64
			for _, run := range r.Runs {
				if run.Method == m && run.RhoMax == rho {
					top1 = append(top1, run.Top1)
					if run.MemoryClassEntropy != nil {
						ent = append(ent, *run.MemoryClassEntropy)
					}
				}
			}
			if len(top1) == 0 {
				continue
			}
			c := Cell{Method: m, RhoMax: rho, Seeds: len(top1)}
			c.Top1Mean, c.Top1Std = meanStd(top1)
			if len(ent) > 0 {
				e, _ := meanStd(ent)
				c.MemoryClassEntropyMean = &e
			}
			r.Cells = append(r.Cells, c)
		}
	}
}

// meanStd returns the mean and the sample standard deviation (0 for one value).
func meanStd(x []float64) (mean, std float64) {
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	if len(x) < 2 {
		return mean, 0
	}
	for _, v := range x {
		std += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(std / float64(len(x)-1))
}

// cell finds the summary of (method, rho).
func (r *Report) cell(method string, rho float64) (Cell, bool) {
	for _, c := range r.Cells {
		if c.Method == method && c.RhoMax == rho {
			return c, true
		}
	}
	return Cell{}, false
}

// Markdown renders the tables in the paper's layout: a row per method, a
// column per ρmax; linear top-1 in percent, mean ± standard deviation over
// the seeds; then the memory's class entropy for the methods with a memory.
func (r *Report) Markdown() string {
	var b strings.Builder
	g := r.Grid
	fmt.Fprintf(&b, "# duelctl reproduce --preset %s\n\n%s.\n\n", g.Name, g.Description)
	fmt.Fprintf(&b, "Training preset `%s`", g.TrainPreset)
	if g.Steps > 0 {
		fmt.Fprintf(&b, ", %d steps", g.Steps)
	}
	fmt.Fprintf(&b, "; %d seed(s); linear probe %d epochs", g.Seeds, g.ProbeEpochs)
	if g.ProbeLimit > 0 {
		fmt.Fprintf(&b, " on %d images per split", g.ProbeLimit)
	}
	b.WriteString(".\n\n## Linear probing top-1 (%)\n\n")
	r.table(&b, func(c Cell) (string, bool) {
		return fmt.Sprintf("%.2f ± %.2f", 100*c.Top1Mean, 100*c.Top1Std), true
	})
	b.WriteString("\n## Memory class entropy (nats, mean over seeds)\n\n")
	r.table(&b, func(c Cell) (string, bool) {
		if c.MemoryClassEntropyMean == nil {
			return "", false
		}
		return fmt.Sprintf("%.3f", *c.MemoryClassEntropyMean), true
	})
	return b.String()
}

// table writes one Markdown table of cell values; rows without any value are left out.
func (r *Report) table(b *strings.Builder, value func(Cell) (string, bool)) {
	b.WriteString("| method |")
	for _, rho := range r.Grid.RhoMax {
		fmt.Fprintf(b, " ρmax %g |", rho)
	}
	b.WriteString("\n|---|")
	for range r.Grid.RhoMax {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, m := range r.Grid.Methods {
		var row strings.Builder
		any := false
		fmt.Fprintf(&row, "| %s |", m)
		for _, rho := range r.Grid.RhoMax {
			s := ""
			if c, ok := r.cell(m, rho); ok {
				if v, ok := value(c); ok {
					s, any = v, true
				}
			}
			fmt.Fprintf(&row, " %s |", s)
		}
		if any {
			b.WriteString(row.String())
			b.WriteString("\n")
		}
	}
}

// write saves results.json and table.md atomically.
func (r *Report) write(dir string) error {
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "results.json"), append(js, '\n')); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, "table.md"), []byte(r.Markdown()))
}
