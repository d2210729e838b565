package memory

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// gpuLikeDUEL stands for another implementation of the DUEL policy
// (cudaduel's): the same name and state, Protected and Compete only.
type gpuLikeDUEL struct{ DUEL }

func (g *gpuLikeDUEL) UnmarshalBinary(data []byte) error {
	if len(data) == 1 && Admission(data[0]) != Protected && Admission(data[0]) != Compete {
		return fmt.Errorf("admission %d not run here", data[0])
	}
	return g.DUEL.UnmarshalBinary(data)
}

// TestCheckpointKeepsPolicyImplementation checks that restoring a
// checkpoint into a memory whose policy has the checkpoint's policy name
// keeps that policy object with the saved state (a run resumed on CUDA
// keeps the GPU's DUEL), replaces a policy of another name, and leaves
// the memory unchanged when the kept policy refuses the state.
func TestCheckpointKeepsPolicyImplementation(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	checkpoint := func(adm Admission) []byte {
		m, _ := New(4, 3, NewDUEL(adm))
		m.Add(unitRows(rng, 6, 3), nil, nil, 0)
		data, err := m.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	own := &gpuLikeDUEL{DUEL: *NewDUEL(Protected)}
	m, _ := New(4, 3, own)
	if err := m.UnmarshalBinary(checkpoint(Compete)); err != nil {
		t.Fatal(err)
	}
	if m.Policy() != Policy(own) || own.Admission != Compete || m.Len() != 4 {
		t.Fatalf("policy %T (admission %v), %d rows: expected the memory's own, Compete, 4 rows", m.Policy(), own.Admission, m.Len())
	}
	rows := slices.Clone(m.Rows())
	if err := m.UnmarshalBinary(checkpoint(MaxScore)); err == nil || !strings.Contains(err.Error(), "not run here") {
		t.Fatalf("state the policy refuses: %v", err)
	}
	if m.Policy() != Policy(own) || own.Admission != Compete || !slices.Equal(m.Rows(), rows) {
		t.Fatal("a refused checkpoint changed the memory")
	}
	f, _ := New(4, 3, NewFIFO())
	if err := f.UnmarshalBinary(checkpoint(Protected)); err != nil {
		t.Fatal(err)
	}
	if d, ok := f.Policy().(*DUEL); !ok || d.Admission != Protected {
		t.Fatalf("policy %T: expected a new *DUEL, Protected", f.Policy())
	}
}
