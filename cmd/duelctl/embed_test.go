package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/internal/npy"
)

// TestEmbedInputChannels checks the channels embedInput takes: 3 always;
// 1, replicated, for a run on a grayscale dataset only.
func TestEmbedInputChannels(t *testing.T) {
	one := &npy.Array{Shape: []int{1, 1, 1, 2}, Float32: []float32{0.25, -0.5}}
	x, err := embedInput(one, "g.npy", true)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := x.Contiguous().Data(), []float32{0.25, -0.5, 0.25, -0.5, 0.25, -0.5}; x.Dim(1) != 3 || !slices.Equal(got, want) {
		t.Errorf("1 channel of a grayscale run: shape %v, %v; want %v", x.Shape(), got, want)
	}
	if _, err := embedInput(one, "g.npy", false); err == nil || !strings.Contains(err.Error(), "1 channel, expected 3") {
		t.Errorf("1 channel of an RGB run: %v", err)
	}
	two := &npy.Array{Shape: []int{1, 2, 1, 1}, Float32: []float32{1, 2}}
	if _, err := embedInput(two, "c.npy", true); err == nil || !strings.Contains(err.Error(), "2 channels, expected 3") {
		t.Errorf("2 channels: %v", err)
	}
}
