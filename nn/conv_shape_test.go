package nn

import (
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/autograd"
)

// TestLastShape checks the geometry a convolution records.
func TestLastShape(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 3))
	c := NewConv2d(3, 4, 3, 2, 1, false, r)
	if _, ok := c.LastShape(); ok {
		t.Fatal("a shape before the first call")
	}
	c.Forward(nil, autograd.NewVar(randTensor(r, 2, 3, 8, 6), false))
	want := ConvShape{N: 2, In: 3, Out: 4, H: 8, W: 6, K: 3, S: 2, P: 1}
	if got, ok := c.LastShape(); !ok || got != want {
		t.Fatalf("LastShape = %+v, %v; want %+v", got, ok, want)
	}
}
