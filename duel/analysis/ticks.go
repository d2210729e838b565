package analysis

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
)

// exactTicks places ticks like plot.DefaultTicks but labels them in plain
// decimal notation with the fewest decimals that write every tick value
// exactly (DefaultTicks may print 1.8 for both 1.75 and 1.8, or 2e+03 for
// 2000). Values of magnitude 1e7 and above, or below 1e-4, keep
// DefaultTicks' labels.
type exactTicks struct{}

// Ticks returns the ticks of [lo, hi].
func (exactTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo < hi) {
		return nil // plot pads empty ranges before asking; DefaultTicks panics on them
	}
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	big := 0.0
	for _, t := range ticks {
		if t.Label != "" {
			big = math.Max(big, math.Abs(t.Value))
		}
	}
	if big >= 1e7 || big < 1e-4 {
		return ticks
	}
	tol := (hi - lo) * 1e-6
	for d := 0; d <= 10; d++ {
		ok := true
		for _, t := range ticks {
			if t.Label == "" {
				continue
			}
			p, _ := strconv.ParseFloat(strconv.FormatFloat(t.Value, 'f', d, 64), 64)
			if math.Abs(p-t.Value) > tol {
				ok = false
				break
			}
		}
		if ok {
			for i := range ticks {
				if ticks[i].Label != "" {
					ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'f', d, 64)
				}
			}
			break
		}
	}
	return ticks
}
