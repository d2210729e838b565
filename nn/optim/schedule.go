package optim

import (
	"fmt"
	"math"
	"slices"
)

// Schedule gives the learning rate of each optimisation step (counted from 0).
type Schedule interface {
	LR(step int) float64
}

// Cosine is a linear warm-up followed by a cosine decay; see CosineWithWarmup.
type Cosine struct {
	BaseLR, MinLR      float64
	WarmupSteps, Total int
}

// CosineWithWarmup returns the schedule, with W = warmupSteps and
// T = totalSteps,
//
//	lr(s) = baseLR * (s+1)/W                                    s < W
//	lr(s) = minLR + (baseLR-minLR) * (1 + cos(pi*(s-W)/(T-W)))/2  W <= s < T
//	lr(s) = minLR                                                s >= T
//
// so the rate reaches baseLR at the last warm-up step, and the decay starts
// at baseLR (s = W) and would reach minLR at s = T. W = 0 means no warm-up.
func CosineWithWarmup(baseLR float64, warmupSteps, totalSteps int, minLR float64) (*Cosine, error) {
	switch {
	case !(baseLR >= 0) || math.IsInf(baseLR, 0):
		return nil, fmt.Errorf("optim: cosine schedule: base lr %v, expected a finite value >= 0", baseLR)
	case !(minLR >= 0) || minLR > baseLR:
		return nil, fmt.Errorf("optim: cosine schedule: min lr %v, expected 0 <= min lr <= base lr %v", minLR, baseLR)
	case warmupSteps < 0 || totalSteps < 1 || warmupSteps > totalSteps:
		return nil, fmt.Errorf("optim: cosine schedule: %d warm-up steps of %d in total, expected 0 <= warm-up <= total and total >= 1", warmupSteps, totalSteps)
	}
	return &Cosine{BaseLR: baseLR, MinLR: minLR, WarmupSteps: warmupSteps, Total: totalSteps}, nil
}

// LR returns the learning rate of step s.
func (c *Cosine) LR(s int) float64 {
	switch {
	case s < 0:
		s = 0
	case s >= c.Total:
		return c.MinLR
	}
	if s < c.WarmupSteps {
		return c.BaseLR * float64(s+1) / float64(c.WarmupSteps)
	}
	p := float64(s-c.WarmupSteps) / float64(c.Total-c.WarmupSteps)
	return c.MinLR + (c.BaseLR-c.MinLR)*(1+math.Cos(math.Pi*p))/2
}

// Steps is a piecewise-constant schedule; see StepSchedule.
type Steps struct {
	BaseLR     float64
	Milestones []int
	Gamma      float64
}

// StepSchedule returns lr(s) = baseLR * gamma^k with k the number of
// milestones <= s (torch.optim.lr_scheduler.MultiStepLR). Milestones must
// be strictly increasing and non-negative.
func StepSchedule(baseLR float64, milestones []int, gamma float64) (*Steps, error) {
	if !(baseLR >= 0) || math.IsInf(baseLR, 0) {
		return nil, fmt.Errorf("optim: step schedule: base lr %v, expected a finite value >= 0", baseLR)
	}
	if !(gamma > 0) || math.IsInf(gamma, 0) {
		return nil, fmt.Errorf("optim: step schedule: gamma %v, expected a finite value > 0", gamma)
	}
	for i, m := range milestones {
		if m < 0 || (i > 0 && m <= milestones[i-1]) {
			return nil, fmt.Errorf("optim: step schedule: milestones %v, expected strictly increasing values >= 0", milestones)
		}
	}
	return &Steps{BaseLR: baseLR, Milestones: slices.Clone(milestones), Gamma: gamma}, nil
}

// LR returns the learning rate of step s.
func (st *Steps) LR(s int) float64 {
	k, _ := slices.BinarySearch(st.Milestones, s+1)
	return st.BaseLR * math.Pow(st.Gamma, float64(k))
}

// Constant is a fixed learning rate.
type Constant float64

// LR returns the constant rate.
func (c Constant) LR(int) float64 { return float64(c) }
