package dist

// Single is the group of one process: every collective leaves its buffers
// as they are (a sum or gather over one rank is the rank's own data).
// Training without an MPI launcher uses it.
type Single struct{}

// Rank returns 0.
func (Single) Rank() int { return 0 }

// Size returns 1.
func (Single) Size() int { return 1 }

// Barrier returns nil.
func (Single) Barrier() error { return nil }

// Broadcast leaves buf unchanged.
func (Single) Broadcast([]byte, int) error { return nil }

// AllReduce leaves buf unchanged.
func (Single) AllReduce([]float32) error { return nil }

// AllReduceFloat64 leaves buf unchanged.
func (Single) AllReduceFloat64([]float64) error { return nil }

// IAllReduce returns a completed request.
func (Single) IAllReduce([]float32) (Request, error) { return done{}, nil }

// AllGather copies send into recv.
func (Single) AllGather(send, recv []byte) error {
	if len(recv) != len(send) {
		return errLength("AllGather", len(recv), len(send))
	}
	copy(recv, send)
	return nil
}

// Abort returns nil: there is no other rank to stop.
func (Single) Abort(int) error { return nil }

// Close returns nil.
func (Single) Close() error { return nil }

// done is a request that has completed.
type done struct{}

func (done) Wait() error         { return nil }
func (done) Test() (bool, error) { return true, nil }
