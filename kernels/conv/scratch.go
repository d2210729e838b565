package conv

// Scratch hands out short-lived buffers with arbitrary contents: Get
// returns n floats, Put takes them back once the caller is done. A nil
// Scratch allocates.
type Scratch interface {
	Get(n int) []float32
	Put(b []float32)
}

// get returns n floats from sc (new ones when sc is nil).
func get(sc Scratch, n int) []float32 {
	if sc == nil {
		return make([]float32, n)
	}
	return sc.Get(n)
}

// put gives b back to sc.
func put(sc Scratch, b []float32) {
	if sc != nil {
		sc.Put(b)
	}
}
