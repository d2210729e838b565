package main

import (
	"fmt"

	"github.com/duel-ssl/duel/duel/analysis"
)

// replayPlotClassFrequency draws, one line per class, how many rows of each class
// the memory held after each update (freq[u][c]; u = 0 is the filled
// memory), against the stream rows seen, and writes it as a PNG to path,
// atomically. The legend stands beside the data area (analysis.PlotClassLines),
// where it hides no curve.
func replayPlotClassFrequency(path string, freq [][]int, k, b int, policy string) error {
	if len(freq) == 0 {
		return fmt.Errorf("plotting %s: no memory update to draw", path)
	}
	xs := make([]float64, len(freq))
	for u := range freq {
		xs[u] = float64(k + u*b)
	}
	return analysis.PlotClassLines(path, fmt.Sprintf("Class frequency in memory (%s, K=%d, B=%d)", policy, k, b), "stream rows seen", xs, freq, nil)
}
