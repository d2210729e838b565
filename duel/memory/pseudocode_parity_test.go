package memory

import (
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/duel-ssl/duel/internal/splitmix"
)

// parityFixture is testdata/pseudocode_parity.json, written by
// gen_parity_fixture.py: the evictions of the paper's update_DUEL executed
// in PyTorch on an integer stream both sides generate.
type parityFixture struct {
	K, B, Z, Updates, Classes int
	Seed                      uint64
	Torch                     string
	Evicted                   map[string][][]int
}

// parityStream rebuilds the fixture's rows bit for bit (see
// gen_parity_fixture.py): integer vectors g with |g| close to 2048, a
// class centre plus noise, 3/4 of them from class 0, some exact copies of
// earlier rows; the rows are g/2048, exact in float32.
type parityStream struct {
	rng     splitmix.RNG
	centres [][]int64
	earlier [][]int64
	z       int
}

func newParityStream(seed uint64, classes, z int) *parityStream {
	s := &parityStream{rng: splitmix.New(seed), z: z}
	for c := 0; c < classes; c++ {
		row := make([]int64, z)
		for d := range row {
			row[d] = int64(s.rng.Uint64()%129) - 64
		}
		s.centres = append(s.centres, row)
	}
	return s
}

func (s *parityStream) rows(n int) []float32 {
	out := make([]float32, 0, n*s.z)
	for i := 0; i < n; i++ {
		var g []int64
		if len(s.earlier) > 0 && s.rng.Uint64()%16 == 0 {
			g = s.earlier[s.rng.Uint64()%uint64(len(s.earlier))]
		} else {
			c := uint64(0)
			if s.rng.Uint64()%4 == 0 {
				c = 1 + s.rng.Uint64()%uint64(len(s.centres)-1)
			}
			v := make([]int64, s.z)
			var n2 int64
			for d := range v {
				v[d] = s.centres[c][d] + int64(s.rng.Uint64()%49) - 24
				n2 += v[d] * v[d]
			}
			r := new(big.Int).Sqrt(big.NewInt(n2)).Int64() // math.isqrt
			if r == 0 {
				v, r = make([]int64, s.z), 1
				v[0] = 1
			}
			g = make([]int64, s.z)
			for d := range v {
				g[d] = floorDiv(v[d]*2048, r)
			}
		}
		s.earlier = append(s.earlier, g)
		for _, x := range g {
			out = append(out, float32(x)/2048)
		}
	}
	return out
}

// floorDiv is Python's a // b for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// TestPseudocodeParity runs the fast DUEL policy and the Go reference on the
// fixture's stream at the paper's shape, (K, B, Z) = (2048, 256, 256), three
// updates, and requires the evictions of the pseudocode executed in PyTorch,
// decision by decision, in each reading of MAX_SCORE it was run with. The
// memory between updates is the survivors in the pseudocode's order,
// comb[selection], as Memory keeps them.
func TestPseudocodeParity(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "pseudocode_parity.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fx parityFixture
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	readings := map[string]Admission{"protected": Protected, "compete": Compete, "max-score": MaxScore}
	if len(fx.Evicted) != len(readings) {
		t.Fatalf("fixture has readings %v, expected %d", fx.Evicted, len(readings))
	}
	src := newParityStream(fx.Seed, fx.Classes, fx.Z)
	init := src.rows(fx.K)
	batches := make([][]float32, fx.Updates)
	for u := range batches {
		batches[u] = src.rows(fx.B)
	}
	for name, want := range fx.Evicted {
		adm, ok := readings[name]
		if !ok {
			t.Fatalf("fixture reading %q unknown", name)
		}
		for _, impl := range []struct {
			name string
			pol  *DUEL
		}{{"fast", NewDUEL(adm)}, {"reference", NewDUELReference(adm)}} {
			t.Run(fmt.Sprintf("%s/%s", name, impl.name), func(t *testing.T) {
				owner := &Memory{} // the fast path's state follows one owner's generations
				mem := slices.Clone(init)
				for u, batch := range batches {
					// Update u follows update u-1's evictions (Lineage).
					a := &Arrival{Memory: mem, Batch: batch, Z: fx.Z, lineage: Lineage{owner: owner, gen: uint64(u), applied: uint64(u)}}
					got, err := impl.pol.Evict(a)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got, want[u]) {
						for i := range got {
							if got[i] != want[u][i] {
								t.Fatalf("update %d, arrival %d: evicted %d, PyTorch %d (first %d equal)", u, i, got[i], want[u][i], i)
							}
						}
						t.Fatalf("update %d: %d evictions, PyTorch %d", u, len(got), len(want[u]))
					}
					comb := append(slices.Clone(mem), batch...)
					next := make([]float32, 0, len(mem))
					for _, p := range keptPositions(got, fx.K) {
						next = append(next, comb[p*fx.Z:(p+1)*fx.Z]...)
					}
					mem = next
				}
				if impl.pol.fast.ready {
					impl.pol.fast.settle()
				}
			})
		}
	}
}
