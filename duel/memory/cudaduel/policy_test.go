package cuda

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/duel-ssl/duel/duel/memory"
)

// TestDUELPolicyOnHost drives DUELPolicy (on hostGPU) and memory.DUEL
// through the same stream and compares their evictions after every batch.
func TestDUELPolicyOnHost(t *testing.T) {
	policyStream(t, hostDev{newHostGPU()})
}

// TestDUELPolicyKernel is TestDUELPolicyOnHost on the GPU (GPU only).
func TestDUELPolicyKernel(t *testing.T) {
	policyStream(t, needGPU(t))
}

// policyStream runs DUELPolicy on g and memory.DUEL through the same
// streams (batches of varying size; once the memory changes behind the
// policy's back, once its shape) and compares their evictions.
func policyStream(t *testing.T, g gpu) {
	for _, adm := range []memory.Admission{memory.Protected, memory.Compete} {
		for _, c := range []duelCase{{8, 3, 4}, {16, 16, 5}, {32, 40, 3}} {
			t.Run(fmt.Sprintf("K%d_B%d_Z%d_%v", c.k, c.b, c.z, adm), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(c.k), uint64(adm)))
				gpuPolicy := &DUELPolicy{g: g, admission: adm}
				defer gpuPolicy.Close()
				want := memory.NewDUEL(adm)
				mem := unitRows(r, c.k, c.z, nil)
				for step := range 8 {
					if step == 6 {
						c.k++ // a memory of another size: the policy starts again
						mem = unitRows(r, c.k, c.z, nil)
					}
					batch := unitRows(r, c.b+step%3, c.z, mem)
					a := &memory.Arrival{Memory: mem, Batch: batch, Z: c.z}
					got, err := gpuPolicy.Evict(a)
					if err != nil {
						t.Fatal(err)
					}
					w, err := want.Evict(a)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got, w) {
						t.Fatalf("step %d: evicted %v, memory.DUEL %v", step, got, w)
					}
					if step == 3 {
						mem = unitRows(r, c.k, c.z, nil) // the memory changed behind the policy's back
						continue
					}
					mem = slices.Clone(gpuPolicy.rows)
				}
			})
		}
	}
}

func TestDUELPolicyNoDevice(t *testing.T) {
	p := NewDUELPolicy(nil, memory.Protected)
	if p.Name() != "duel" {
		t.Errorf("Name() = %q", p.Name())
	}
	if _, err := p.Evict(&memory.Arrival{Memory: []float32{1}, Batch: []float32{1}, Z: 1}); err == nil {
		t.Error("Evict without a device succeeded")
	}
}
