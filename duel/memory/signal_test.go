package memory

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSignal has goroutines wait for a counter to reach their own values
// while another one advances it slowly, so that waits go past the spin and
// sleep, and checks that every wait returns once its condition holds.
func TestSignal(t *testing.T) {
	s := newSignal()
	var n atomic.Int64
	var wg sync.WaitGroup
	for _, want := range []int64{0, 1, 5, 20, 20, 50} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.wait(func() bool { return n.Load() >= want })
			if got := n.Load(); got < want {
				t.Errorf("wait for %d returned at %d", want, got)
			}
		}()
	}
	for range 50 {
		time.Sleep(100 * time.Microsecond)
		n.Add(1)
		s.notify()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a wait did not return after its condition held")
	}
}
