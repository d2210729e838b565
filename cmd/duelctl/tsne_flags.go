package main

import (
	"fmt"
	"math"

	"github.com/urfave/cli/v2"

	"github.com/duel-ssl/duel/duel/analysis"
	"github.com/duel-ssl/duel/duel/train"
)

// tsneMethodFlags are analyze's and bench tsne's --tsne-method and
// --tsne-theta.
func tsneMethodFlags() []cli.Flag {
	ts := analysis.DefaultTSNEConfig()
	return []cli.Flag{
		&cli.StringFlag{Name: "tsne-method", Value: ts.Method.String(), Usage: "t-SNE gradient: barnes-hut (scikit-learn's default: P over each point's 3·perplexity nearest neighbours, the repulsion from a quadtree; O(N log N) an iteration) or exact (every pair: O(N²) time and memory, for up to a few thousand points)"},
		&cli.Float64Flag{Name: "tsne-theta", Value: ts.Theta, Usage: "Barnes-Hut's opening angle (scikit-learn's angle): a quadtree cell narrower than this fraction of its distance repels as one body; smaller is closer to the exact gradient and slower (barnes-hut only)"},
	}
}

// setTSNEMethod sets cfg's method and angle from --tsne-method and
// --tsne-theta, refusing an unknown method, an angle that is not a
// finite positive number, and an angle given with the exact method.
func setTSNEMethod(c *cli.Context, cfg *analysis.TSNEConfig) error {
	method, err := analysis.ParseTSNEMethod(c.String("tsne-method"))
	if err != nil {
		return flagError("tsne-method", fmt.Sprintf("%q", c.String("tsne-method")), "barnes-hut or exact")
	}
	cfg.Method, cfg.Theta = method, c.Float64("tsne-theta")
	switch {
	case !(cfg.Theta > 0) || math.IsInf(cfg.Theta, 0):
		return flagError("tsne-theta", cfg.Theta, "a finite number > 0")
	case method == analysis.TSNEExact && c.IsSet("tsne-theta"):
		return fmt.Errorf("--tsne-theta %g: the exact method takes every pair and has no angle (it applies to --tsne-method barnes-hut)", cfg.Theta)
	}
	return nil
}

// checkTSNEMemory refuses the exact method for n points when its four n x
// n float64 matrices (distances, conditional and joint P, and the KL's
// weights) would not fit in the machine's memory.
func checkTSNEMemory(method analysis.TSNEMethod, n int) error {
	if method != analysis.TSNEExact {
		return nil
	}
	return train.CheckMemory(train.MemoryNeed{Flag: "tsne-method", Got: `"exact"`, Bytes: 32 * float64(n) * float64(n),
		What: fmt.Sprintf("for the exact method's pair matrices of %d points (--tsne-method barnes-hut needs O(N))", n)})
}
