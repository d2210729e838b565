package cudaduel

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/duel/memory"
	"strings"
)

// TestDUELPolicyOnHost drives Policy (on cudatest.Host) and memory.DUEL
// through the same stream and compares their evictions after every batch.
func TestDUELPolicyOnHost(t *testing.T) {
	policyStream(t, newHost())
}

// TestDUELPolicyKernel is TestDUELPolicyOnHost on the GPU (GPU only).
func TestDUELPolicyKernel(t *testing.T) {
	policyStream(t, needGPU(t))
}

// policyStream runs Policy on g and memory.DUEL through the same
// streams (batches of varying size; once the memory changes behind the
// policy's back, once its shape) and compares their evictions.
func policyStream(t *testing.T, g cuda.GPU) {
	for _, adm := range []memory.Admission{memory.Protected, memory.Compete} {
		for _, c := range []duelCase{{8, 3, 4}, {16, 16, 5}, {32, 40, 3}} {
			t.Run(fmt.Sprintf("K%d_B%d_Z%d_%v", c.k, c.b, c.z, adm), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(c.k), uint64(adm)))
				gpuPolicy := &Policy{g: g, admission: adm}
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

// TestDUELPolicyNoDevice checks that a policy, a memory and an update on
// no GPU (nil, or a nil *cuda.Device) fail with "no device".
func TestDUELPolicyNoDevice(t *testing.T) {
	for _, g := range []cuda.GPU{nil, (*cuda.Device)(nil)} {
		p := NewPolicy(g, memory.Protected)
		if p.Name() != "duel" {
			t.Errorf("Name() = %q", p.Name())
		}
		if _, err := p.Evict(&memory.Arrival{Memory: []float32{1}, Batch: []float32{1}, Z: 1}); err == nil || !strings.Contains(err.Error(), "no device") {
			t.Errorf("%T: Evict without a device: error %v, want one containing \"no device\"", g, err)
		}
		if _, err := NewMemory(g, 4, 2, MemoryOptions{}); err == nil || !strings.Contains(err.Error(), "no device") {
			t.Errorf("%T: NewMemory without a device: error %v, want one containing \"no device\"", g, err)
		}
		if _, err := Update(g, []float32{1}, []float32{1}, 1, Options{}); err == nil || !strings.Contains(err.Error(), "no device") {
			t.Errorf("%T: Update without a device: error %v, want one containing \"no device\"", g, err)
		}
	}
}
