package cudaduel

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/duel/memory"
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

// TestDUELPolicyInMemoryOnHost drives two memory.Memory, one managed by
// Policy (on cudatest.Host) and one by memory.DUEL, through the same
// batches, with what a training run does between them (SetRows as the
// memory refresh does, rows expiring, the safe update), and compares the
// rows they hold after every batch. The policy must load the rows only
// when the memory did something else than apply its last evictions.
func TestDUELPolicyInMemoryOnHost(t *testing.T) {
	policyInMemory(t, newHost())
}

// TestDUELPolicyInMemoryKernel is TestDUELPolicyInMemoryOnHost on the GPU
// (GPU only).
func TestDUELPolicyInMemoryKernel(t *testing.T) {
	policyInMemory(t, needGPU(t))
}

func policyInMemory(t *testing.T, g cuda.GPU) {
	const k, z, b = 24, 6, 8
	cases := []struct {
		name string
		opts []memory.Option
	}{
		{"plain", nil},
		{"max_age", []memory.Option{memory.WithMaxAge(4)}},
		{"safe", []memory.Option{memory.WithSafeUpdate(true)}},
	}
	for _, adm := range []memory.Admission{memory.Protected, memory.Compete} {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s_%v", c.name, adm), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(len(c.name)), uint64(adm)))
				gpuPolicy := NewPolicy(g, adm)
				defer gpuPolicy.Close()
				onGPU, err := memory.New(k, z, gpuPolicy, c.opts...)
				if err != nil {
					t.Fatal(err)
				}
				onCPU, err := memory.New(k, z, memory.NewDUEL(adm), c.opts...)
				if err != nil {
					t.Fatal(err)
				}
				// A load is due when the memory's rows are not those the
				// last update left: at the first arrival, after rows
				// were appended, expired or re-embedded, after a
				// rejected update.
				arrivals, rejected, want, dirty := 0, 0, 0, true
				for step := range 11 {
					batch := unitRows(r, b, z, onCPU.Rows())
					sg, err := onGPU.Add(batch, nil, nil, step)
					if err != nil {
						t.Fatal(err)
					}
					sc, err := onCPU.Add(batch, nil, nil, step)
					if err != nil {
						t.Fatal(err)
					}
					if sg != sc || !slices.Equal(onGPU.Rows(), onCPU.Rows()) || !slices.Equal(onGPU.IDs(), onCPU.IDs()) {
						t.Fatalf("step %d: the memories differ (stats %+v on the GPU, %+v on the CPU)", step, sg, sc)
					}
					if sg.Filled < b {
						arrivals++
						if dirty || sg.Expired > 0 || sg.Filled > 0 {
							want++
						}
					}
					dirty = sg.Filled == b || sg.Rejected
					if sg.Rejected {
						rejected++
					}
					if step == 5 { // a refresh re-embeds the rows held
						rows := onCPU.Rows()
						for i := range rows {
							rows[i] += float32(r.NormFloat64()) / 64
						}
						for _, m := range []*memory.Memory{onGPU, onCPU} {
							if err := m.SetRows(rows); err != nil {
								t.Fatal(err)
							}
						}
						dirty = true
					}
				}
				t.Logf("%d arrivals reached the policy, %d rejected by the safe update, %d loads", arrivals, rejected, gpuPolicy.loads)
				if arrivals < 6 || gpuPolicy.loads != want || c.name == "plain" && want != 2 {
					t.Errorf("%d arrivals, %d loads, expected %d (2 without expiries and rejections: the first arrival, the one after SetRows)", arrivals, gpuPolicy.loads, want)
				}
			})
		}
	}
}

// TestDUELPolicyCheckpointOnHost checks that memory checkpoints are the
// same whichever DUEL decided: one written by a memory.DUEL memory loads
// into a memory built with Policy (on cudatest.Host), which keeps its
// policy, takes the saved admission and then decides as the CPU's; one
// written by it loads into a memory.DUEL memory; an admission the kernel
// does not run is refused, naming it.
func TestDUELPolicyCheckpointOnHost(t *testing.T) {
	const k, z, b = 12, 5, 4
	r := rand.New(rand.NewPCG(11, 12))
	onCPU, _ := memory.New(k, z, memory.NewDUEL(memory.Compete))
	for step := range 5 {
		if _, err := onCPU.Add(unitRows(r, b, z, nil), nil, nil, step); err != nil {
			t.Fatal(err)
		}
	}
	data, err := onCPU.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	gpuPolicy := NewPolicy(newHost(), memory.Protected)
	defer gpuPolicy.Close()
	onGPU, _ := memory.New(k, z, gpuPolicy)
	if err := onGPU.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	if a, ok := onGPU.Policy().(memory.Admitting); onGPU.Policy() != memory.Policy(gpuPolicy) || !ok || a.AdmissionMode() != memory.Compete {
		t.Fatalf("after loading: policy %T, admission %v; expected the GPU's, compete", onGPU.Policy(), gpuPolicy.admission)
	}
	for step := 5; step < 9; step++ {
		batch := unitRows(r, b, z, onCPU.Rows())
		for _, m := range []*memory.Memory{onCPU, onGPU} {
			if _, err := m.Add(batch, nil, nil, step); err != nil {
				t.Fatal(err)
			}
		}
		if !slices.Equal(onGPU.IDs(), onCPU.IDs()) {
			t.Fatalf("step %d: ids %v on the GPU, %v on the CPU", step, onGPU.IDs(), onCPU.IDs())
		}
	}
	data, err = onGPU.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	back, _ := memory.New(k, z, memory.NewFIFO())
	if err := back.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	if a, ok := back.Policy().(memory.Admitting); !ok || a.AdmissionMode() != memory.Compete || !slices.Equal(back.IDs(), onGPU.IDs()) {
		t.Fatalf("the GPU's checkpoint on the CPU: policy %T, ids %v", back.Policy(), back.IDs())
	}
	maxScore, _ := memory.New(k, z, memory.NewDUEL(memory.MaxScore))
	for step := range 4 {
		maxScore.Add(unitRows(r, b, z, nil), nil, nil, step)
	}
	data, _ = maxScore.MarshalBinary()
	if err := onGPU.UnmarshalBinary(data); err == nil || !strings.Contains(err.Error(), "max-score") {
		t.Fatalf("a maxscore checkpoint on the GPU's policy: %v", err)
	}
}

// TestPolicyFor checks the admissions PolicyFor builds a Policy for.
func TestPolicyFor(t *testing.T) {
	build := PolicyFor(newHost())
	for _, adm := range []memory.Admission{memory.Protected, memory.Compete, memory.InsertFirst, memory.MaxScore} {
		p := build(adm)
		runs := adm == memory.Protected || adm == memory.Compete
		if got, ok := p.(*Policy); (p != nil) != runs || runs && (!ok || got.admission != adm) {
			t.Errorf("%v: built %T %v, expected a Policy: %v", adm, p, p, runs)
		}
	}
}

// TestPolicyUnmarshalBad refuses policy states other than one admission
// byte of a mode the kernel runs, naming what was found, and keeps the
// policy usable.
func TestPolicyUnmarshalBad(t *testing.T) {
	p := NewPolicy(newHost(), memory.Protected)
	defer p.Close()
	for _, tc := range []struct {
		data []byte
		want string
	}{
		{nil, "0 bytes"}, {[]byte{byte(memory.Protected), 0}, "2 bytes"},
		{[]byte{byte(memory.InsertFirst)}, "insert-first"}, {[]byte{200}, "admission"},
	} {
		if err := p.UnmarshalBinary(tc.data); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("UnmarshalBinary(%v): %v, want an error mentioning %q", tc.data, err, tc.want)
		}
		if p.admission != memory.Protected {
			t.Errorf("UnmarshalBinary(%v) changed the admission to %v", tc.data, p.admission)
		}
	}
}

// FuzzPolicyUnmarshal feeds arbitrary bytes to the GPU policy's state
// reader: an error, or one of the two admissions the kernel runs, whose
// MarshalBinary gives the same bytes back.
func FuzzPolicyUnmarshal(f *testing.F) {
	f.Add([]byte{byte(memory.Compete)})
	f.Add([]byte{})
	f.Add([]byte{byte(memory.MaxScore), 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		p := NewPolicy(newHost(), memory.Protected)
		defer p.Close()
		if err := p.UnmarshalBinary(data); err != nil {
			return
		}
		if p.admission != memory.Protected && p.admission != memory.Compete {
			t.Fatalf("UnmarshalBinary(%v) accepted admission %v", data, p.admission)
		}
		if back, err := p.MarshalBinary(); err != nil || !bytes.Equal(back, data) {
			t.Fatalf("UnmarshalBinary(%v) then MarshalBinary: %v, %v", data, back, err)
		}
	})
}
