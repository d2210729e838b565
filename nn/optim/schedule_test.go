package optim

import (
	"math"
	"strings"
	"testing"
)

func TestCosineWithWarmup(t *testing.T) {
	c, err := CosineWithWarmup(0.05, 4, 12, 0.001)
	if err != nil {
		t.Fatal(err)
	}
	// Hand-computed: warm-up 0.05*(s+1)/4, then 0.001 + 0.049*(1+cos(pi*(s-4)/8))/2.
	want := map[int]float64{
		-1: 0.0125, 0: 0.0125, 1: 0.025, 2: 0.0375, 3: 0.05,
		4:  0.05,
		6:  0.001 + 0.049*(1+math.Sqrt2/2)/2, // (s-4)/8 = 1/4
		8:  0.0255,                           // halfway: 0.001 + 0.049/2
		10: 0.001 + 0.049*(1-math.Sqrt2/2)/2,
		12: 0.001, 100: 0.001,
	}
	for s, w := range want {
		if got := c.LR(s); math.Abs(got-w) > 1e-15 {
			t.Errorf("LR(%d) = %v, want %v", s, got, w)
		}
	}
	nw, _ := CosineWithWarmup(1, 0, 2, 0)
	if got := []float64{nw.LR(0), nw.LR(1), nw.LR(2)}; math.Abs(got[0]-1) > 1e-15 || math.Abs(got[1]-0.5) > 1e-15 || got[2] != 0 {
		t.Errorf("no warm-up: %v, want [1 0.5 0]", got)
	}
	for i := 0; i < 12; i++ {
		if i >= 4 && c.LR(i+1) > c.LR(i) {
			t.Errorf("not decreasing at %d", i)
		}
	}
}

func TestStepSchedule(t *testing.T) {
	s, err := StepSchedule(0.001, []int{10, 20}, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	for step, w := range map[int]float64{0: 0.001, 9: 0.001, 10: 0.0005, 19: 0.0005, 20: 0.00025, 1000: 0.00025} {
		if got := s.LR(step); math.Abs(got-w) > 1e-18 {
			t.Errorf("LR(%d) = %v, want %v", step, got, w)
		}
	}
	if Constant(0.3).LR(7) != 0.3 {
		t.Error("Constant")
	}
}

func TestScheduleErrors(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"warmup > total", second(CosineWithWarmup(1, 5, 4, 0)), "warm-up"},
		{"total 0", second(CosineWithWarmup(1, 0, 0, 0)), "total >= 1"},
		{"min > base", second(CosineWithWarmup(1, 0, 5, 2)), "min lr"},
		{"nan", second(CosineWithWarmup(math.NaN(), 0, 5, 0)), "base lr"},
		{"milestones", second(StepSchedule(1, []int{5, 5}, 0.1)), "strictly increasing"},
		{"gamma", second(StepSchedule(1, nil, 0)), "gamma"},
	}
	for _, c := range cases {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, c.err, c.want)
		}
	}
}

func second[T any](_ T, err error) error { return err }
