package cudaduel

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/duel-ssl/duel/cuda/driver"
	"github.com/duel-ssl/duel/duel/memory"
	kc "github.com/duel-ssl/duel/kernels/cuda"
)

// nullGPU is a cuda.GPU that runs nothing: launches, copies to the device
// and memsets return at once, allocations are distinct fake addresses,
// and a copy from the device gives 0, 1, 2, ... as int32s (distinct
// evicted positions). Memory.Update on it costs only its host side.
type nullGPU struct{ next driver.DevicePtr }

func (g *nullGPU) Launch(*kc.Module, string, kc.Config, ...any) error { return nil }
func (g *nullGPU) Alloc(bytes int) (driver.DevicePtr, error) {
	p := g.next + 256
	g.next = p + driver.DevicePtr(bytes)
	return p, nil
}
func (g *nullGPU) Free(driver.DevicePtr)                       {}
func (g *nullGPU) Zero(driver.DevicePtr, int) error            { return nil }
func (g *nullGPU) CopyToDevice(driver.DevicePtr, []byte) error { return nil }
func (g *nullGPU) Synchronize() error                          { return nil }
func (g *nullGPU) Multiprocessors() int                        { return 132 }
func (g *nullGPU) CopyFromDevice(dst []byte, _ driver.DevicePtr) error {
	for i := 0; i+4 <= len(dst); i += 4 {
		binary.LittleEndian.PutUint32(dst[i:], uint32(i/4))
	}
	return nil
}

// BenchmarkDUELUpdateHostSide measures what Memory.Update costs the host
// at the GPU benchmark's shape (K 4096, B 256, Z 128) with a GPU that
// does nothing: the batch's check, the launches' arguments, the result.
// On a GPU the check (most of it, see BenchmarkCheckRows) runs while the
// device uploads the batch and computes its dots; the rest adds to the
// device's time.
func BenchmarkDUELUpdateHostSide(b *testing.B) {
	const k, bs, z = 4096, 256, 128
	r := rand.New(rand.NewPCG(1, 2))
	m, err := NewMemory(&nullGPU{}, k, z, MemoryOptions{Batch: bs})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	scores := make([]float64, k)
	for i := range scores {
		scores[i] = 0.5 * k
	}
	if err := m.Load(unitRows(r, k, z, nil), scores); err != nil {
		b.Fatal(err)
	}
	batch := unitRows(r, bs, z, nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Update(batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDUELPolicyHostSide measures what one training step's memory
// update costs the host at the GPU benchmark's shape (K 4096, B 256, Z
// 128): memory.Memory.Add (normalising the batch, moving the rows kept)
// with the DUEL deciding
//   - memory: on a GPU that does nothing through Policy, the rows on the
//     device known current from the arrival's lineage (what train
//     --device cuda runs);
//   - hand: Policy.Evict alone on arrivals built by hand, which it must
//     compare with the rows it kept and copy (an arrival without a
//     lineage);
//   - cpu: memory.NewDUEL on the host, the whole update (the peer).
func BenchmarkDUELPolicyHostSide(b *testing.B) {
	const k, bs, z = 4096, 256, 128
	r := rand.New(rand.NewPCG(1, 2))
	rows := unitRows(r, k, z, nil)
	var batches [][]float32
	for range 8 {
		batches = append(batches, unitRows(r, bs, z, rows))
	}
	for _, c := range []struct {
		name   string
		policy func() memory.Policy
	}{
		{"memory", func() memory.Policy { return NewPolicy(&nullGPU{}, memory.Protected) }},
		{"cpu", func() memory.Policy { return memory.NewDUEL(memory.Protected) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			p := c.policy()
			m, err := memory.New(k, z, p)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := m.Add(rows, nil, nil, 0); err != nil {
				b.Fatal(err)
			}
			step := 1
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Add(batches[step%len(batches)], nil, nil, step); err != nil {
					b.Fatal(err)
				}
				step++
			}
		})
	}
	b.Run("hand", func(b *testing.B) {
		p := NewPolicy(&nullGPU{}, memory.Protected)
		mem := slices.Clone(rows)
		b.ReportAllocs()
		step := 0
		for b.Loop() {
			batch := batches[step%len(batches)]
			if _, err := p.Evict(&memory.Arrival{Memory: mem, Batch: batch, Z: z}); err != nil {
				b.Fatal(err)
			}
			mem = append(mem[:0], p.rows...) // the memory's rows after the evictions, as a caller holds them
			step++
		}
	})
}
