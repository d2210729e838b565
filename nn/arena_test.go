package nn

import "testing"

// TestArenaServesSmallerSteps checks that a step with smaller shapes than
// the loop's usual ones (an evaluation's last batch) is served from the
// usual steps' buffers, which go back to their own sizes afterwards, and
// that a request takes a free buffer at most twice its size.
func TestArenaServesSmallerSteps(t *testing.T) {
	layers := []int{1000, 500, 250, 250} // floats a layer's output takes an image
	step := func(a *Arena, batch int) {
		a.Reset()
		for _, per := range layers {
			if b := a.get(batch * per); len(b) != batch*per {
				t.Fatalf("get(%d) returned %d floats", batch*per, len(b))
			}
		}
	}
	for _, tc := range []struct {
		name    string
		batches []int // one pass of the loop
		allocs  int   // buffers the arena holds after it
	}{
		{"full batches", []int{128, 128, 128}, 4},
		{"a smaller last batch", []int{128, 128, 80}, 4},
		{"a last batch of a third", []int{128, 128, 40}, 6}, // served by smaller layers but the last two
		{"a first batch smaller", []int{80, 128, 128}, 6},   // two of its buffers serve smaller layers later
	} {
		a := NewArena()
		for pass := range 3 {
			for _, b := range tc.batches {
				step(a, b)
			}
			if got := a.Allocs(); got != tc.allocs {
				t.Errorf("%s: %d buffers allocated after pass %d, want %d", tc.name, got, pass+1, tc.allocs)
			}
		}
	}
}

// TestArenaKeepsCapacities checks that a buffer lent for a smaller
// request goes back whole: the next request of its own size gets it, and
// a request of less than half of it does not.
func TestArenaKeepsCapacities(t *testing.T) {
	a := NewArena()
	big := a.get(100)
	a.Reset()
	if b := a.get(60); &b[0] != &big[0] || len(b) != 60 {
		t.Fatalf("get(60) with a buffer of 100 free: got a new buffer of %d", len(b))
	}
	a.Reset()
	if b := a.get(100); &b[0] != &big[0] {
		t.Fatal("the buffer lent for 60 floats did not serve 100 after Reset")
	}
	a.Reset()
	if b := a.get(49); &b[0] == &big[0] {
		t.Fatal("get(49) took a buffer of 100")
	}
	a.Reset()
	lent := a.tensor(false, 6, 10) // 60 floats from the buffer of 100
	a.release(lent)
	if b := a.get(100); &b[0] != &big[0] {
		t.Fatal("a released tensor's buffer did not go back whole")
	}
}
