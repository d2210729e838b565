package reproduce

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/duel-ssl/duel/internal/atomicfile"
)

// Report is a grid's runs (those finished so far) and their summary per
// (variant, ρmax).
type Report struct {
	Grid       Grid        `json:"grid"`
	Provenance Provenance  `json:"provenance"`
	Planned    int         `json:"runs_planned"`
	Runs       []RunResult `json:"runs"`
	Cells      []Cell      `json:"cells"`
	Plots      []PlotFile  `json:"plots"` // files beside report.md
	// Verdict is the text of verdict.md in the report's directory, written
	// by hand; report.md shows it under its title.
	Verdict string `json:"-"`
}

// Stat is a mean and sample standard deviation over N seeds.
type Stat struct {
	Mean float64 `json:"mean"`
	Std  float64 `json:"std"`
	N    int     `json:"n"`
}

// Cell is the summary over the seeds of one (variant, ρmax), as in the
// paper's tables.
type Cell struct {
	Variant  string  `json:"variant"`
	Method   string  `json:"method"`
	RhoMax   float64 `json:"rho_max"`
	Seeds    int     `json:"seeds"`
	Top1Mean float64 `json:"top1_mean"`
	Top1Std  float64 `json:"top1_std"`

	MemoryClassEntropy   *Stat `json:"memory_class_entropy,omitempty"`
	IntraClassVariance   *Stat `json:"intra_class_variance,omitempty"`
	InterClassSimilarity *Stat `json:"inter_class_similarity,omitempty"`
	MemoryAgeMean        *Stat `json:"memory_age_mean,omitempty"`
}

// newReport starts the report of g, whose planned runs are planned.
func newReport(g Grid, planned int, command string) *Report {
	return &Report{Grid: g, Planned: planned, Provenance: detectProvenance(command), Runs: []RunResult{}, Cells: []Cell{}, Plots: []PlotFile{}} // [] in results.json before any run, not null
}

// add records a finished run and updates the cells.
func (r *Report) add(run RunResult) {
	r.Runs = append(r.Runs, run)
	r.summarise()
}

// summarise fills Cells from Runs, in the grid's order.
func (r *Report) summarise() {
	r.Cells = r.Cells[:0]
	for _, v := range r.Grid.variants() {
		for _, rho := range r.Grid.RhoMax {
			runs := r.runsOf(v.String(), rho)
			if len(runs) == 0 {
				continue
			}
			c := Cell{Variant: v.String(), Method: v.Method, RhoMax: rho, Seeds: len(runs)}
			top1 := stat(runs, func(x *RunResult) *float64 { return &x.Top1 })
			c.Top1Mean, c.Top1Std = top1.Mean, top1.Std
			c.MemoryClassEntropy = stat(runs, func(x *RunResult) *float64 { return x.MemoryClassEntropy })
			c.IntraClassVariance = stat(runs, func(x *RunResult) *float64 { return x.IntraClassVariance })
			c.InterClassSimilarity = stat(runs, func(x *RunResult) *float64 { return x.InterClassSimilarity })
			c.MemoryAgeMean = stat(runs, func(x *RunResult) *float64 {
				if x.MemoryAge == nil {
					return nil
				}
				return x.MemoryAge.AgeMean
			})
			r.Cells = append(r.Cells, c)
		}
	}
}

// runsOf returns the finished runs of (variant, rho), by seed.
func (r *Report) runsOf(variant string, rho float64) []*RunResult {
	var out []*RunResult
	for i := range r.Runs {
		if x := &r.Runs[i]; x.Variant == variant && x.RhoMax == rho {
			out = append(out, x)
		}
	}
	return out
}

// stat summarises field over the runs that have it (nil when none has).
func stat(runs []*RunResult, field func(*RunResult) *float64) *Stat {
	var x []float64
	for _, r := range runs {
		if v := field(r); v != nil {
			x = append(x, *v)
		}
	}
	if len(x) == 0 {
		return nil
	}
	m, s := meanStd(x)
	return &Stat{Mean: m, Std: s, N: len(x)}
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

// cell finds the summary of (variant, rho).
func (r *Report) cell(variant string, rho float64) (Cell, bool) {
	for _, c := range r.Cells {
		if c.Variant == variant && c.RhoMax == rho {
			return c, true
		}
	}
	return Cell{}, false
}

// Write saves the report into dir: the plots, results.json and report.md
// (with dir/verdict.md under its title when there is one), each atomically,
// and the archive of the runs in dir/runs. A plot or an archived run that
// an earlier report in dir wrote and this one does not (another grid's
// runs, curves they lack) is removed; verdict.md and any other file are
// left as they are.
func (r *Report) Write(dir string) error {
	v, err := os.ReadFile(filepath.Join(dir, "verdict.md"))
	switch {
	case err == nil:
		r.Verdict = strings.TrimSpace(string(v))
	case errors.Is(err, fs.ErrNotExist):
		r.Verdict = ""
	default:
		return fmt.Errorf("--report %s: %w", dir, err)
	}
	r.Provenance.Date = time.Now().UTC().Format("2006-01-02 15:04 MST")
	plots, err := r.plot(dir)
	if err != nil {
		return err
	}
	r.Plots = append([]PlotFile{}, plots...) // [] when there is none yet
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "results.json"), append(js, '\n')); err != nil {
		return err
	}
	if err := archiveRuns(dir, r.Runs, r.plannedRuns()); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, "report.md"), []byte(r.Markdown()))
}

// plannedRuns returns the names of the grid's runs, finished or not.
func (r *Report) plannedRuns() []string {
	var names []string
	for _, k := range r.Grid.runs() {
		names = append(names, k.name())
	}
	return names
}

// wallSeconds returns the training and the evaluation seconds summed over the runs.
func (r *Report) wallSeconds() (trainS, probeS float64) {
	for _, x := range r.Runs {
		trainS += x.TrainSeconds
		probeS += x.ProbeSeconds
	}
	return trainS, probeS
}
