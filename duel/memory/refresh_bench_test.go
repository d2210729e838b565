package memory

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkDUELAfterRefresh measures what re-embedding rows (Refresh, the
// training option --mem-refresh) costs memory.DUEL's next update: the
// fast path's carried state no longer describes the memory, so it rebuilds
// (the K x K similarities) instead of updating (B x (K+B)). cpu-small's
// memory: K 2048, B 64, Z 128; "plain" is the same Add without a refresh
// in between, the peer.
func BenchmarkDUELAfterRefresh(b *testing.B) {
	const k, bs, z = 2048, 64, 128
	for _, c := range []struct {
		name    string
		refresh int // rows re-embedded before each Add
	}{{"plain", 0}, {"refresh8", 8}} {
		b.Run(c.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			m, err := New(k, z, NewDUEL(Protected))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := m.Add(unitRows(r, k, z), nil, nil, 0); err != nil {
				b.Fatal(err)
			}
			var batches [][]float32
			for range 8 {
				batches = append(batches, unitRows(r, bs, z))
			}
			fresh := unitRows(r, c.refresh, z)
			pos := make([]int, c.refresh)
			for i := range pos {
				pos[i] = i * (k / max(c.refresh, 1))
			}
			step := 1
			for b.Loop() {
				if c.refresh > 0 {
					if err := m.Refresh(pos, fresh, step); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := m.Add(batches[step%len(batches)], nil, nil, step); err != nil {
					b.Fatal(err)
				}
				step++
			}
		})
	}
}
