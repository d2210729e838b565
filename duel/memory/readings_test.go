package memory

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// algorithm1 is Algorithm 1 (Section 4.2) transcribed line by line with the
// distinctiveness information of Eq. 10, I_d(x_j) = -log(mean over the rows
// held of q(j, .)), recomputed from scratch at every arrival:
//
//	for b in 1..B:
//	    M <- M u {x_b}
//	    J <- argmin_{j in 1..K+1} I_d(x_j; f, M)
//	    M <- M \ {x_J}
//
// Ties go to the lowest position. It returns the evicted positions in the
// numbering of Policy (rows held 0..K-1, then the batch).
func algorithm1(a *Arrival) []int {
	z, k := a.Z, a.K()
	n := k + a.B()
	comb := make([]float32, n*z)
	toGrid(comb[:k*z], a.Memory)
	toGrid(comb[k*z:], a.Batch)
	q := func(i, j int) float64 {
		var d float64
		for c := 0; c < z; c++ {
			d += float64(comb[i*z+c]) * float64(comb[j*z+c])
		}
		return qOf(float32(d))
	}
	held := make([]int, 0, k+1)
	for i := 0; i < k; i++ {
		held = append(held, i)
	}
	var evicted []int
	for x := k; x < n; x++ {
		held = append(held, x) // M <- M u {x_b}
		J, best := -1, math.Inf(1)
		for _, j := range held {
			var sum float64
			for _, l := range held {
				sum += q(j, l)
			}
			id := -math.Log(sum / float64(len(held)))
			if id < best { // strict: ties keep the lowest position
				J, best = j, id
			}
		}
		evicted = append(evicted, J)
		held = slices.DeleteFunc(held, func(p int) bool { return p == J }) // M <- M \ {x_J}
	}
	return evicted
}

// TestInsertFirstIsAlgorithm1 checks the InsertFirst reading, on the fast
// policy and the reference, against the transcription of Algorithm 1 on
// random streams, update after update; a newcomer must be rejected on
// arrival at least once, which the other readings never do.
func TestInsertFirstIsAlgorithm1(t *testing.T) {
	rejected := 0
	for i, s := range [][3]int{{1, 1, 2}, {3, 4, 3}, {8, 3, 5}, {16, 8, 6}, {40, 12, 9}} {
		k, b, z := s[0], s[1], s[2]
		t.Run(fmt.Sprintf("K=%d,B=%d,Z=%d", k, b, z), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(i), 11))
			rec := &recorder{Policy: NewDUEL(InsertFirst)}
			m, _ := New(k, z, rec)
			if _, err := m.Add(stream(rng, k, z), nil, nil, 0); err != nil {
				t.Fatal(err)
			}
			for u := 1; u <= 6; u++ {
				batch := stream(rng, b, z)
				norm := make([]float32, len(batch))
				if err := normalizeRows(norm, batch, z); err != nil {
					t.Fatal(err)
				}
				want := algorithm1(&Arrival{Memory: slices.Clone(m.Rows()), Batch: norm, Z: z})
				if _, err := m.Add(batch, nil, nil, u); err != nil {
					t.Fatal(err)
				}
				got := rec.log[len(rec.log)-1]
				if !slices.Equal(got, want) {
					t.Fatalf("update %d: evicted %v, Algorithm 1 %v", u, got, want)
				}
				for j, p := range got {
					if p == k+j {
						rejected++
					}
				}
			}
		})
	}
	if rejected == 0 {
		t.Error("no newcomer was rejected on arrival: the reading is not Algorithm 1's")
	}
}

// TestMaxScoreReplacesOneRowPerBatch checks the literal MAX_SCORE reading:
// the first arrival evicts the most duplicated row held, every later one
// the newcomer before it, so one held row is replaced by the batch's last
// row.
func TestMaxScoreReplacesOneRowPerBatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const k, b, z = 20, 7, 5
	for u := 0; u < 5; u++ {
		mem := make([]float32, k*z)
		normalizeRows(mem, stream(rng, k, z), z)
		batch := make([]float32, b*z)
		normalizeRows(batch, stream(rng, b, z), z)
		a := &Arrival{Memory: mem, Batch: batch, Z: z}
		got, err := NewDUEL(MaxScore).Evict(a)
		if err != nil {
			t.Fatal(err)
		}
		first := duelReference(&Arrival{Memory: mem, Batch: batch[:z], Z: z}, Protected)[0]
		want := []int{first}
		for i := 1; i < b; i++ {
			want = append(want, k+i-1)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("batch %d: evicted %v, expected %v", u, got, want)
		}
	}
}

func TestParseAdmission(t *testing.T) {
	for i, name := range AdmissionNames {
		a, err := ParseAdmission(name)
		if err != nil || a != Admission(i) || a.String() != name {
			t.Errorf("%q: %v %v", name, a, err)
		}
	}
	if _, err := ParseAdmission("literal"); err == nil {
		t.Error(`"literal" accepted`)
	}
	var d DUEL
	if err := d.UnmarshalBinary([]byte{byte(len(AdmissionNames))}); err == nil {
		t.Error("an unknown admission byte was accepted")
	}
	if err := d.UnmarshalBinary([]byte{byte(InsertFirst)}); err != nil || d.Admission != InsertFirst {
		t.Errorf("insert-first state: %v %v", d.Admission, err)
	}
}
