package eval

import (
	"math"
	"slices"
	"testing"
)

func TestNewFeatures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		x      []float32
		labels []int32
		d      int
		ok     bool
	}{
		{"ok", []float32{1, 2, 3, 4}, []int32{0, 1}, 2, true},
		{"empty", nil, nil, 3, true},
		{"d0", nil, nil, 0, false},
		{"short", []float32{1, 2, 3}, []int32{0, 1}, 2, false},
		{"NaN", []float32{1, float32(math.NaN())}, []int32{0}, 2, false},
		{"Inf", []float32{float32(math.Inf(-1)), 1}, []int32{0}, 2, false},
		{"negative label", []float32{1, 2}, []int32{-1}, 2, false},
	} {
		f, err := NewFeatures(tc.x, tc.labels, tc.d)
		if (err == nil) != tc.ok {
			t.Errorf("%s: error %v, expected ok=%v", tc.name, err, tc.ok)
		}
		if err == nil && (f.N != len(tc.labels) || f.D != tc.d) {
			t.Errorf("%s: got N=%d D=%d", tc.name, f.N, f.D)
		}
	}
}

func TestNormalized(t *testing.T) {
	f := &Features{N: 2, D: 2, X: []float32{3, 4, 0, 0}, Labels: []int32{0, 1}}
	g := f.Normalized()
	if !slices.Equal(g.X, []float32{0.6, 0.8, 0, 0}) {
		t.Errorf("Normalized = %v", g.X)
	}
	if f.X[0] != 3 {
		t.Error("Normalized modified its input")
	}
}

func TestBalancedSubset(t *testing.T) {
	labels := []int32{0, 0, 0, 0, 1, 2, 2, 0, 1}
	for _, tc := range []struct {
		n    int
		want []int
	}{
		{0, []int{0, 1, 2, 3, 4, 5, 6, 7, 8}},
		{100, []int{0, 1, 2, 3, 4, 5, 6, 7, 8}},
		{3, []int{0, 4, 5}},
		{5, []int{0, 1, 4, 5, 8}},
		{7, []int{0, 1, 2, 4, 5, 6, 8}},
	} {
		if got := BalancedSubset(labels, tc.n); !slices.Equal(got, tc.want) {
			t.Errorf("BalancedSubset(%d) = %v, expected %v", tc.n, got, tc.want)
		}
	}
}

func TestRankOf(t *testing.T) {
	s := []float64{1, 3, 3, 0}
	for label, want := range []int{2, 0, 1, 3} {
		if got := rankOf(s, label); got != want {
			t.Errorf("rankOf(%v, %d) = %d, expected %d", s, label, got, want)
		}
	}
}
