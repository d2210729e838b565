package optim

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// scheduleFixture is testdata/schedule.json, written by
// gen_schedule_fixtures.py with PyTorch 1.13.
type scheduleFixture struct {
	Cases []struct {
		Name          string
		Base          float64
		Steps         int
		PerEpoch      int `json:"per_epoch"`
		LR            []float64
		Warmup, Total int
		MinLR         float64 `json:"min_lr"`
		WarmupStartLR float64 `json:"warmup_start_lr"`
		Milestones    []int
		Gamma         float64
	}
}

// TestScheduleMatchesSoloLearn compares the schedules with the rate of
// every optimisation step under solo-learn's LinearWarmupCosineAnnealingLR
// and PyTorch's MultiStepLR, stepped per batch (solo-learn's default
// interval) or per epoch (Lr evaluated at step/per_epoch, in epochs).
//
// CosineWithWarmup(base, W, T, min) is solo-learn's schedule with
// warmup_start_lr = base/W: the same rate at every step s < T (relative
// error 1e-12, the chainable form's rounding after 2000 steps). With
// solo-learn's default warmup_start_lr (3e-5) the rates differ during the
// warm-up only, s < W-1: solo-learn starts at 3e-5, CosineWithWarmup at
// base/W, both reach base at s = W-1. Past T, CosineWithWarmup stays at
// min while solo-learn's chainable form climbs back up the cosine.
func TestScheduleMatchesSoloLearn(t *testing.T) {
	b, err := os.ReadFile("testdata/schedule.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx scheduleFixture
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	if len(fx.Cases) != 7 {
		t.Fatalf("fixture has %d cases, expected 7", len(fx.Cases))
	}
	for _, c := range fx.Cases {
		t.Run(c.Name, func(t *testing.T) {
			var sched Schedule
			var err error
			if c.Milestones != nil {
				sched, err = StepSchedule(c.Base, c.Milestones, c.Gamma)
			} else {
				sched, err = CosineWithWarmup(c.Base, c.Warmup, c.Total, c.MinLR)
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(c.LR) != c.Steps || c.PerEpoch < 1 {
				t.Fatalf("%d rates for %d steps, %d steps an epoch", len(c.LR), c.Steps, c.PerEpoch)
			}
			var worst float64
			for s, want := range c.LR {
				e := s / c.PerEpoch
				got := sched.LR(e)
				switch {
				case c.Milestones == nil && e >= c.Total:
					if got != c.MinLR {
						t.Errorf("step %d, past the end: %v, expected min %v", s, got, c.MinLR)
					}
					continue
				case c.Milestones == nil && e < c.Warmup-1 && c.WarmupStartLR != c.Base/float64(c.Warmup):
					// solo-learn's own starting rate: a line from it to base.
					if w := c.WarmupStartLR + float64(e)*(c.Base-c.WarmupStartLR)/float64(c.Warmup-1); math.Abs(w-want) > 1e-12*c.Base {
						t.Errorf("step %d: solo-learn %v, expected its warm-up line %v", s, want, w)
					}
					if got <= want {
						t.Errorf("step %d: %v, expected above solo-learn's warm-up from %v (%v)", s, got, c.WarmupStartLR, want)
					}
					continue
				}
				d := math.Abs(got-want) / c.Base
				worst = math.Max(worst, d)
				if d > 1e-12 {
					t.Errorf("step %d (epoch %d): lr %v, PyTorch %v", s, e, got, want)
				}
			}
			t.Logf("worst error / base lr: %.2g", worst)
		})
	}
}
