package memory

// FIFO is MoCo's queue: the oldest row leaves. Incoming row b evicts
// position b, which is the oldest row still held (a batch larger than the
// memory ends up evicting its own earlier rows).
type FIFO struct{}

// NewFIFO returns the first-in first-out policy.
func NewFIFO() *FIFO { return &FIFO{} }

// Name returns "fifo".
func (*FIFO) Name() string { return "fifo" }

// Evict returns 0, 1, ..., B-1.
func (*FIFO) Evict(a *Arrival) ([]int, error) {
	ev := make([]int, a.B())
	for b := range ev {
		ev[b] = b
	}
	return ev, nil
}
