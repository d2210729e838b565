package scratch

import "testing"

type countingPool struct{ gets, puts int }

func (c *countingPool) Get(n int) []float32 { c.gets++; return make([]float32, n) }
func (c *countingPool) Put(b []float32)     { c.puts++ }

func TestGetPut(t *testing.T) {
	for _, tt := range []struct {
		name string
		pool *countingPool
	}{{"nil pool allocates", nil}, {"pool", &countingPool{}}} {
		t.Run(tt.name, func(t *testing.T) {
			var p Pool
			if tt.pool != nil {
				p = tt.pool
			}
			for _, n := range []int{0, 1, 17} {
				if b := Get(p, n); len(b) != n {
					t.Errorf("Get(%d): %d floats", n, len(b))
				} else {
					Put(p, b)
				}
			}
			if tt.pool != nil && (tt.pool.gets != 3 || tt.pool.puts != 3) {
				t.Errorf("gets %d, puts %d, want 3 and 3", tt.pool.gets, tt.pool.puts)
			}
		})
	}
}
