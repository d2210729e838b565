package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/duel/memory"
)

// unitRows returns n random unit rows of length z. Some rows repeat earlier
// ones (ties between scores) and some components sit exactly halfway
// between two grid points (the rounding rule matters there).
func unitRows(r *rand.Rand, n, z int, pool []float32) []float32 {
	out := make([]float32, n*z)
	for i := range n {
		row := out[i*z : (i+1)*z]
		if len(pool) >= z && r.IntN(4) == 0 {
			j := r.IntN(len(pool) / z)
			copy(row, pool[j*z:(j+1)*z])
			continue
		}
		var ss float64
		for c := range row {
			row[c] = float32(r.NormFloat64())
			ss += float64(row[c]) * float64(row[c])
		}
		inv := 1 / math.Sqrt(ss)
		for c := range row {
			row[c] = float32(float64(row[c]) * inv)
		}
		if z > 1 && r.IntN(3) == 0 {
			row[r.IntN(z)] = float32(r.IntN(9)-4) / 4096 // k/4096: odd k is halfway between grid points
			row[0] = -0.5 / 2048
		}
	}
	return out
}

// keptAfter applies evicted to positions 0..k+b-1 as memory.Memory does.
func keptAfter(ev []int, k int) []int {
	gone := map[int]bool{}
	for _, p := range ev {
		gone[p] = true
	}
	var kept []int
	for p := range k + len(ev) {
		if !gone[p] {
			kept = append(kept, p)
		}
	}
	return kept
}

type duelCase struct{ k, b, z int }

var duelCases = []duelCase{
	{1, 1, 1}, {1, 3, 2}, {2, 0, 3}, {3, 5, 4}, {5, 2, 7}, {7, 7, 1}, {16, 4, 8},
	{33, 9, 5}, {40, 64, 3}, {64, 16, 17}, {100, 37, 12}, {129, 31, 33},
}

// stream runs update on a stream of batches for every case and admission,
// and compares its decisions with memory.DUEL (the reference path and the
// fast path), carrying scores between updates.
func stream(t *testing.T, name string, cases []duelCase, update func(mem, batch []float32, z int, opt DUELOptions) (DUELResult, error)) {
	for ci, c := range cases {
		for _, adm := range []memory.Admission{memory.Protected, memory.Compete} {
			t.Run(fmt.Sprintf("%s/K%d_B%d_Z%d_%v", name, c.k, c.b, c.z, adm), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(ci), uint64(adm)))
				mem := unitRows(r, c.k, c.z, nil)
				policy := memory.NewDUEL(adm)
				var scores []float64
				for step := range 4 {
					batch := unitRows(r, c.b, c.z, mem)
					want := []int{} // an empty batch evicts nothing (memory never asks)
					if c.b > 0 {
						var err error
						if want, err = policy.Evict(&memory.Arrival{Memory: mem, Batch: batch, Z: c.z}); err != nil {
							t.Fatal(err)
						}
					}
					got, err := update(mem, batch, c.z, DUELOptions{Admission: adm, Scores: scores})
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got.Evicted, want) {
						t.Fatalf("step %d: evicted %v, memory.DUEL evicts %v", step, got.Evicted, want)
					}
					if kw := keptAfter(want, c.k); !slices.Equal(got.Kept, kw) {
						t.Fatalf("step %d: kept %v, want %v", step, got.Kept, kw)
					}
					next := make([]float32, 0, len(mem))
					for _, p := range got.Kept {
						if p < c.k {
							next = append(next, mem[p*c.z:(p+1)*c.z]...)
						} else {
							next = append(next, batch[(p-c.k)*c.z:(p-c.k+1)*c.z]...)
						}
					}
					mem = next
					// Carried scores equal the scores computed from scratch,
					// bit for bit.
					fresh := duelHost(mem, nil, c.z, DUELOptions{Admission: adm})
					if !slices.Equal(got.Scores, fresh.Scores) {
						t.Fatalf("step %d: carried scores %v differ from recomputed %v", step, got.Scores, fresh.Scores)
					}
					scores = got.Scores
					if step == 2 {
						scores = nil // also start again from recomputed scores
					}
				}
			})
		}
	}
}

// TestDUELHost checks, on every machine, that the Go transcription of the
// kernel makes memory.DUEL's decisions.
func TestDUELHost(t *testing.T) {
	stream(t, "host", duelCases, func(mem, batch []float32, z int, opt DUELOptions) (DUELResult, error) {
		if _, _, _, err := checkDUEL(mem, batch, z, opt); err != nil {
			return DUELResult{}, err
		}
		return duelHost(mem, batch, z, opt), nil
	})
}

// TestDUELKernel checks the kernel against memory.DUEL at several block
// sizes (GPU only).
func TestDUELKernel(t *testing.T) {
	d := needGPU(t)
	for _, bs := range []int{32, 64, 256, 1024} {
		stream(t, fmt.Sprintf("block%d", bs), duelCases, func(mem, batch []float32, z int, opt DUELOptions) (DUELResult, error) {
			opt.BlockSize = bs
			return d.DUELUpdate(mem, batch, z, opt)
		})
	}
}

func TestDUELBadInput(t *testing.T) {
	row := []float32{0.6, 0.8}
	tests := []struct {
		name       string
		mem, batch []float32
		z          int
		opt        DUELOptions
		want       string
	}{
		{"zero z", row, row, 0, DUELOptions{}, "row length 0"},
		{"empty memory", nil, row, 2, DUELOptions{}, "memory of 0 values"},
		{"ragged memory", row[:1], row, 2, DUELOptions{}, "memory of 1 values"},
		{"ragged batch", row, row[:1], 2, DUELOptions{}, "batch of 1 values"},
		{"admission", row, row, 2, DUELOptions{Admission: 7}, "admission mode 7"},
		{"scores", row, row, 2, DUELOptions{Scores: []float64{1, 2}}, "2 carried scores for 1 rows"},
		{"block", row, row, 2, DUELOptions{BlockSize: 48}, "block size 48"},
		{"big block", row, row, 2, DUELOptions{BlockSize: 2048}, "block size 2048"},
		{"nan", row, []float32{float32(math.NaN()), 0}, 2, DUELOptions{}, "batch row 0 column 0 is NaN"},
		{"not unit", []float32{3, 0}, row, 2, DUELOptions{}, "memory row 0 column 0 is 3"},
		{"no device", row, row, 2, DUELOptions{}, "no device"},
	}
	for _, tc := range tests {
		_, err := (*Device)(nil).DUELUpdate(tc.mem, tc.batch, tc.z, tc.opt)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// BenchmarkDUELHost measures the Go transcription of the kernel (it is not
// the fast CPU path: see duel/memory's benchmarks for that).
func BenchmarkDUELHost(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	mem, batch := unitRows(r, 512, 64, nil), unitRows(r, 64, 64, nil)
	s := duelHost(mem, nil, 64, DUELOptions{}).Scores
	for b.Loop() {
		duelHost(mem, batch, 64, DUELOptions{Scores: s})
	}
}

// BenchmarkDUELKernel measures one update on the GPU (GPU only).
func BenchmarkDUELKernel(b *testing.B) {
	d := needGPU(b)
	r := rand.New(rand.NewPCG(1, 2))
	mem, batch := unitRows(r, 4096, 128, nil), unitRows(r, 256, 128, nil)
	res, err := d.DUELUpdate(mem, nil, 128, DUELOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := d.DUELUpdate(mem, batch, 128, DUELOptions{Scores: res.Scores}); err != nil {
			b.Fatal(err)
		}
	}
}
