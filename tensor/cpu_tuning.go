package tensor

import (
	"fmt"

	"github.com/duel-ssl/duel/kernels/conv"
	"github.com/duel-ssl/duel/kernels/gemm"
)

// KernelChoices lists, one line a choice, what the CPU backend takes from
// the wisdom file (duelctl bench tune, bench step --tune-conv) rather than
// from the CPU's caches and its built-in rules: the SGEMM blocking and the
// convolutions' algorithms. They change a run's bits on a machine with the
// same seed, so a run records them (config.json's ran.kernels). Nothing
// when no tuning applies.
func (c cpu) KernelChoices() []string {
	var lines []string
	if t := gemm.CurrentTuning(); t.Source == "tuned" {
		lines = append(lines, fmt.Sprintf("sgemm: kernel %s, blocking mc=%d kc=%d nc=%d ns=%d (tuned, from the wisdom file entry %s)", t.Kernel, t.MC, t.KC, t.NC, t.NS, gemm.WisdomEntry))
	}
	for _, e := range []struct {
		bf16  bool
		entry string
	}{{false, conv.WisdomEntry}, {true, conv.WisdomEntryBF16}} {
		if n := conv.TunedShapes(e.bf16); n > 0 {
			shapes := "shapes"
			if n == 1 {
				shapes = "shape"
			}
			lines = append(lines, fmt.Sprintf("conv: the algorithms of %d %s from the wisdom file entry %s (the built-in rules for the others)", n, shapes, e.entry))
		}
	}
	return lines
}
