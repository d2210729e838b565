package main

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/duel-ssl/duel/duel/analysis"
	"github.com/duel-ssl/duel/duel/train"
)

// memoryAgePlots summarises the ages and negative uses of the run's memory
// rows into rep.MemoryAge and draws memory_age.png and memory_uses.png into
// the directory out.
func memoryAgePlots(r *train.Run, out string, rep *analysis.Report, figure func(file string)) error {
	mem := r.Memory
	u := r.MemoryUsage() // the ages as metrics.jsonl has them at the run's step
	rep.MemoryAge = &analysis.MemoryAge{AgeMean: u.AgeMean, AgeMedian: u.AgeMedian, AgeMax: u.AgeMax, UsesMean: u.UsesMean, UsesMax: u.UsesMax}
	ages := make([]float64, mem.Len())
	for i, s := range mem.Steps() {
		ages[i] = float64(int64(r.Step-1) - s)
	}
	uses := make([]float64, mem.Len())
	for i, n := range mem.Uses() {
		uses[i] = float64(n)
	}
	if err := analysis.PlotHistogram(filepath.Join(out, "memory_age.png"),
		fmt.Sprintf("Age of the %d memory rows at step %d (%s)", mem.Len(), r.Step, r.Config.Policy), "age (steps since the row entered)", ages, 40); err != nil {
		return err
	}
	figure("memory_age.png")
	if err := analysis.PlotHistogram(filepath.Join(out, "memory_uses.png"),
		fmt.Sprintf("Steps at which each memory row was a negative (step %d)", r.Step), "times drawn as a negative", uses, 40); err != nil {
		return err
	}
	figure("memory_uses.png")
	return nil
}

// classCountsPlot draws memory_classes.png, the rows of each class in the
// memory over training, from the memory_class_counts of metrics.jsonl up to
// the run's step, into the directory out. A run whose log has no class
// counts (older runs, unlabelled data) draws nothing.
func classCountsPlot(r *train.Run, out string, names []string, figure func(file string)) error {
	ms, err := train.ReadMetrics(r.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var steps []float64
	var counts [][]int
	for _, m := range ms {
		if len(m.MemoryClassCounts) > 0 && m.Step <= r.Step {
			steps = append(steps, float64(m.Step))
			counts = append(counts, m.MemoryClassCounts)
		}
	}
	if len(steps) == 0 {
		return nil
	}
	if err := analysis.PlotClassCounts(filepath.Join(out, "memory_classes.png"),
		fmt.Sprintf("Rows of each class in memory over training (%s)", r.Config.Policy), steps, counts, names); err != nil {
		return err
	}
	figure("memory_classes.png")
	return nil
}
