package cudaduel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/internal/cudatest"
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
func stream(t *testing.T, name string, cases []duelCase, update func(mem, batch []float32, z int, opt Options) (Result, error)) {
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
					got, err := update(mem, batch, c.z, Options{Admission: adm, Scores: scores})
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got.Evicted, want) {
						t.Fatalf("step %d: evicted %v, memory.DUEL evicts %v", step, got.Evicted, want)
					}
					if kw := keptAfter(want, c.k); !slices.Equal(got.Kept, kw) {
						t.Fatalf("step %d: kept %v, want %v", step, got.Kept, kw)
					}
					mem = keptRows(mem, batch, got.Kept, c.k, c.z)
					// Carried scores equal the scores computed from scratch,
					// bit for bit.
					fresh := duelHost(mem, nil, c.z, Options{Admission: adm})
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

// residentCases are the shapes of the resident streams: odd sizes, K < B,
// B = 1, an empty batch, and batches that grow past the memory's capacity.
var residentCases = []duelCase{
	{1, 1, 1}, {1, 3, 2}, {2, 0, 3}, {3, 5, 4}, {5, 2, 7}, {7, 7, 1}, {16, 4, 8}, {33, 9, 5}, {40, 64, 3}, {64, 16, 17},
}

// residentStream runs a Memory made by open (on some gpu, with some
// block size) through a stream of batches of varying sizes for every case
// and admission, and compares with memory.DUEL after every update:
// evictions, kept positions, and the scores it carries against scores
// recomputed from scratch, bit for bit. Halfway the memory is loaded again
// from the host rows, once with its carried scores and once without.
func residentStream(t *testing.T, name string, cases []duelCase, open func(k, z int, adm memory.Admission) (*Memory, error)) {
	for ci, c := range cases {
		for _, adm := range []memory.Admission{memory.Protected, memory.Compete} {
			t.Run(fmt.Sprintf("%s/K%d_B%d_Z%d_%v", name, c.k, c.b, c.z, adm), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(ci)+100, uint64(adm)))
				m, err := open(c.k, c.z, adm)
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				mem := unitRows(r, c.k, c.z, nil)
				if err := m.Load(mem, nil); err != nil {
					t.Fatal(err)
				}
				policy := memory.NewDUEL(adm)
				sizes := []int{c.b, c.b / 2, c.b + 3, 1, c.b, 2*c.b + 1}
				for step, b := range sizes {
					batch := unitRows(r, b, c.z, mem)
					want := []int{}
					if b > 0 {
						if want, err = policy.Evict(&memory.Arrival{Memory: mem, Batch: batch, Z: c.z}); err != nil {
							t.Fatal(err)
						}
					}
					got, err := m.Update(batch)
					if err != nil {
						t.Fatalf("step %d (B %d): %v", step, b, err)
					}
					if !slices.Equal(got.Evicted, want) {
						t.Fatalf("step %d (B %d): evicted %v, memory.DUEL evicts %v", step, b, got.Evicted, want)
					}
					if kw := keptAfter(want, c.k); !slices.Equal(got.Kept, kw) {
						t.Fatalf("step %d (B %d): kept %v, want %v", step, b, got.Kept, kw)
					}
					mem = keptRows(mem, batch, got.Kept, c.k, c.z)
					scores, err := m.Scores()
					if err != nil {
						t.Fatal(err)
					}
					// Large memories are checked at the last step only
					// (duelHost is O(K^2 Z)).
					if c.k*c.k*c.z <= 1<<24 || step == len(sizes)-1 {
						fresh := duelHost(mem, nil, c.z, Options{Admission: adm})
						if !slices.Equal(scores, fresh.Scores) {
							t.Fatalf("step %d (B %d): carried scores %v differ from recomputed %v", step, b, scores, fresh.Scores)
						}
					}
					switch step {
					case 2:
						err = m.Load(mem, scores)
					case 3:
						err = m.Load(mem, nil)
					}
					if err != nil {
						t.Fatal(err)
					}
				}
			})
		}
	}
}

// openResident returns an opener of Memory on g with the given block
// size, its selection in shared memory or, with global, in global memory.
func openResident(g cuda.GPU, block int, global bool) func(k, z int, adm memory.Admission) (*Memory, error) {
	return func(k, z int, adm memory.Admission) (*Memory, error) {
		m, err := NewMemory(g, k, z, MemoryOptions{Admission: adm, BlockSize: block, Batch: 2})
		if err == nil && global {
			m.shared = 0
		}
		return m, err
	}
}

// openPrefetch is open with MemoryOptions.Prefetch set: the one-block
// kernels' SELECT_PREFETCH.
func openPrefetch(open func(k, z int, adm memory.Admission) (*Memory, error)) func(k, z int, adm memory.Admission) (*Memory, error) {
	return func(k, z int, adm memory.Admission) (*Memory, error) {
		m, err := open(k, z, adm)
		if err == nil {
			m.prefetch = true
		}
		return m, err
	}
}

// TestDUELHost checks, on every machine, that the Go transcription of the
// kernels makes memory.DUEL's decisions.
func TestDUELHost(t *testing.T) {
	stream(t, "host", duelCases, func(mem, batch []float32, z int, opt Options) (Result, error) {
		if _, _, _, err := checkDUEL(mem, batch, z, opt); err != nil {
			return Result{}, err
		}
		return duelHost(mem, batch, z, opt), nil
	})
}

// tieRows returns n rows of length z drawn from g distinct unit rows
// (row r is copy r % g; with g = 1 every row is the same): every score
// ties with many others, so the positions decide.
func tieRows(r *rand.Rand, n, z, g int) []float32 {
	base := unitRows(r, g, z, nil)
	out := make([]float32, 0, n*z)
	for i := range n {
		j := i % g
		out = append(out, base[j*z:(j+1)*z]...)
	}
	return out
}

// TestDUELTies checks the decisions when scores tie (memories and batches
// of copies of one or a few rows, where the victim is decided by the
// protection and the position only) against memory.DUEL: the host
// transcription on single updates, and resident streams of such batches
// (the rows then sit in slots out of position order, so the positions of
// the tie rule come from the slot tables) on cudatest.Host and on the
// emulator, selection in shared and in global memory.
func TestDUELTies(t *testing.T) {
	cases := []struct{ k, b, z, g int }{{1, 1, 3, 1}, {5, 3, 4, 1}, {8, 8, 4, 1}, {70, 30, 5, 1}, {70, 30, 5, 3}, {33, 90, 2, 2}}
	for _, c := range cases {
		for _, adm := range []memory.Admission{memory.Protected, memory.Compete} {
			r := rand.New(rand.NewPCG(uint64(c.k), uint64(c.g)))
			mem, batch := tieRows(r, c.k, c.z, c.g), tieRows(r, c.b, c.z, c.g)
			want, err := memory.NewDUEL(adm).Evict(&memory.Arrival{Memory: mem, Batch: batch, Z: c.z})
			if err != nil {
				t.Fatal(err)
			}
			got := duelHost(mem, batch, c.z, Options{Admission: adm})
			if !slices.Equal(got.Evicted, want) {
				t.Errorf("host K%d B%d G%d %v: evicted %v, memory.DUEL evicts %v", c.k, c.b, c.g, adm, got.Evicted, want)
			}
		}
	}
	gpus := []struct {
		name string
		g    cuda.GPU
	}{{"hostgpu", newHost()}}
	if !testing.Short() {
		gpus = append(gpus, struct {
			name string
			g    cuda.GPU
		}{"emu", cudatest.NewEmulator(t)})
	}
	for _, gpu := range gpus {
		for _, global := range []bool{false, true} {
			for _, c := range cases {
				for _, adm := range []memory.Admission{memory.Protected, memory.Compete} {
					name := fmt.Sprintf("%s_global%v/K%d_B%d_G%d_%v", gpu.name, global, c.k, c.b, c.g, adm)
					r := rand.New(rand.NewPCG(uint64(c.k)+7, uint64(c.g)))
					m, err := NewMemory(gpu.g, c.k, c.z, MemoryOptions{Admission: adm, BlockSize: 64, Batch: c.b})
					if err != nil {
						t.Fatal(err)
					}
					if global {
						m.shared = 0
					}
					tieSteps(t, name, m, r, c.k, c.b, c.z, c.g, 4, adm, "")
					m.Close()
				}
			}
		}
	}
}

// updateLikeDUEL runs m's update of batch and fails t (what names the
// update) unless its evictions are policy's on mem, the rows m holds;
// it returns the rows m holds after it.
func updateLikeDUEL(t *testing.T, what string, m *Memory, policy memory.Policy, mem, batch []float32) []float32 {
	t.Helper()
	want, err := policy.Evict(&memory.Arrival{Memory: mem, Batch: batch, Z: m.z})
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.Update(batch)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !slices.Equal(got.Evicted, want) {
		t.Fatalf("%s (%s): evicted %v, memory.DUEL evicts %v", what, m.ran, got.Evicted, want)
	}
	return keptRows(mem, batch, got.Kept, m.k, m.z)
}

// tieSteps loads m with k tied rows of z values (g distinct ones, tieRows)
// and offers it steps batches of b tied rows, each against memory.DUEL's
// evictions and the carried scores against recomputed ones; kernel, when
// not empty, is the selection kernel every update must have run.
func tieSteps(t *testing.T, name string, m *Memory, r *rand.Rand, k, b, z, g, steps int, adm memory.Admission, kernel string) {
	t.Helper()
	mem := tieRows(r, k, z, g)
	if err := m.Load(mem, nil); err != nil {
		t.Fatal(err)
	}
	policy := memory.NewDUEL(adm)
	for step := range steps {
		mem = updateLikeDUEL(t, fmt.Sprintf("%s step %d", name, step), m, policy, mem, tieRows(r, b, z, g))
		if kernel != "" && m.ran != kernel {
			t.Fatalf("%s step %d: ran %s, want %s", name, step, m.ran, kernel)
		}
		checkCarried(t, name, step, m, mem, z, adm)
	}
}

// checkCarried fails t unless m's carried scores are those recomputed
// from the rows it now holds, mem.
func checkCarried(t *testing.T, name string, step int, m *Memory, mem []float32, z int, adm memory.Admission) {
	t.Helper()
	scores, err := m.Scores()
	if err != nil {
		t.Fatal(err)
	}
	if fresh := duelHost(mem, nil, z, Options{Admission: adm}); !slices.Equal(scores, fresh.Scores) {
		t.Fatalf("%s step %d: carried scores %v differ from recomputed %v", name, step, scores, fresh.Scores)
	}
}

// TestPackedFits checks the bit budget of the packed keys: packedFits
// holds exactly up to K+B = 2^18, and wherever it holds the largest biased
// score (below 2*(K+2B)*2^24) shifted past the position field stays below
// bit 62.
func TestPackedFits(t *testing.T) {
	for _, c := range []struct {
		k, b int
		want bool
	}{
		{1, 0, true}, {1, 1, true}, {4096, 256, true}, {25000, 1000, true},
		{1<<18 - 256, 256, true}, {1<<18 - 1, 1, true}, {1 << 18, 0, true},
		{1<<18 - 255, 256, false}, {1 << 18, 1, false}, {1<<28 - 256, 256, false},
	} {
		if got := packedFits(c.k, c.b); got != c.want {
			t.Errorf("packedFits(%d, %d) = %v, want %v", c.k, c.b, got, c.want)
		}
	}
	for _, n := range []int{1, 2, 3, 1000, 4352, 1<<17 + 5, 1 << 18, 1<<18 + 1, 1 << 20} {
		for _, b := range []int{0, 1, n / 2, n} {
			k := n - b
			if k < 1 {
				continue
			}
			bits := posBits(k, b)
			if 1<<bits < n || bits > 0 && 1<<(bits-1) >= n {
				t.Errorf("posBits(%d, %d) = %d: not the bits of %d", k, b, bits, n-1)
			}
			top := uint64(2*(k+2*b)) << 24 // above every biased score
			if fits := top<<bits <= 1<<62 && top>>(64-bits) == 0; packedFits(k, b) != fits {
				t.Errorf("packedFits(%d, %d) = %v, but the scores below %d shifted by %d bits fit: %v", k, b, packedFits(k, b), top, bits, fits)
			}
		}
	}
}

// TestPackedKeyOrder checks that the packed keys order candidates as
// duel/memory's evictsBefore does (not protected first, then the higher
// score, then the lower position): on the extremes of the fields and on
// random candidates with many ties, for several position widths.
func TestPackedKeyOrder(t *testing.T) {
	type cand struct {
		u    uint64
		pos  int
		prot bool
	}
	before := func(a, b cand) bool { // evictsBefore on (protected, S = u - off, position)
		switch {
		case a.prot != b.prot:
			return b.prot
		case a.u != b.u:
			return a.u > b.u
		}
		return a.pos < b.pos
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, sh := range []struct{ k, b int }{{1, 1}, {3, 5}, {4096, 256}, {1<<18 - 256, 256}} {
		bits := posBits(sh.k, sh.b)
		hi := uint64(2*(sh.k+2*sh.b))<<24 - 1 // the largest biased score
		n := sh.k + sh.b
		var cs []cand
		for _, u := range []uint64{1, 2, hi / 2, hi - 1, hi} {
			for _, pos := range []int{0, 1, n / 2, n - 1} {
				for _, prot := range []bool{false, true} {
					cs = append(cs, cand{u, min(pos, n-1), prot})
				}
			}
		}
		for range 300 {
			cs = append(cs, cand{1 + uint64(r.IntN(4))*(hi/4), r.IntN(n), r.IntN(3) == 0})
		}
		for _, a := range cs {
			ka := packKey(a.u, a.pos, bits, !a.prot)
			if ka>>63 != 1 || (ka>>62&1 == 1) == a.prot || (ka<<2)>>(2+bits) != a.u || n > 1 && int(uint64(1)<<bits-1-ka&(uint64(1)<<bits-1)) != a.pos {
				t.Fatalf("K %d B %d: key %#x of %+v does not hold its fields", sh.k, sh.b, ka, a)
			}
			for _, b := range cs {
				kb := packKey(b.u, b.pos, bits, !b.prot)
				if a != b && (ka > kb) != before(a, b) {
					t.Fatalf("K %d B %d: keys %#x of %+v and %#x of %+v: key order %v, evictsBefore %v", sh.k, sh.b, ka, a, kb, b, ka > kb, before(a, b))
				}
			}
		}
	}
}

// TestDUELKernel checks the kernels against memory.DUEL at several block
// sizes (GPU only): one update at a time (Update), then resident
// streams (Memory) with the selection in shared and in global memory,
// on small shapes and on shapes of a real memory, one of them beyond the
// default 48 KiB of shared memory (K+B = 6200: the opt-in); from sm_80
// duel_select_rounds and on sm_90 duel_select_cluster and
// duel_select_rounds8 too (resident streams, and their device state
// against duel_select_shared's).
func TestDUELKernel(t *testing.T) {
	d := needGPU(t)
	for _, bs := range []int{32, 64, 256, 1024} {
		stream(t, fmt.Sprintf("block%d", bs), duelCases, func(mem, batch []float32, z int, opt Options) (Result, error) {
			opt.BlockSize = bs
			return Update(d, mem, batch, z, opt)
		})
	}
	big := []duelCase{{1000, 256, 64}, {4096, 256, 128}, {6000, 200, 32}}
	if sanitizing() {
		big = big[:1]
	}
	m, err := NewMemory(d, 6000, 32, MemoryOptions{Batch: 200})
	if err != nil {
		t.Fatal(err)
	}
	if t.Logf("%v: duel_select_shared may use %d bytes of dynamic shared memory", d, m.shared); d.Capability() >= 70 && m.shared < selectShared(6000, 200) {
		t.Errorf("%v: dynamic shared memory limited to %d bytes: the opt-in beyond 48 KiB failed", d, m.shared)
	}
	m.Close()
	for _, bs := range []int{32, 256, 1024} {
		for _, global := range []bool{false, true} {
			cases := residentCases
			if bs == 256 {
				cases = append(slices.Clone(residentCases), big...)
			}
			residentStream(t, fmt.Sprintf("resident%d_global%v", bs, global), cases, openResident(d, bs, global))
		}
	}
	// The same with each step prefetching the runners-up's rows (the
	// decisions must not change).
	residentStream(t, "resident1024_prefetch", append(slices.Clone(residentCases), big...), openPrefetch(openResident(d, 1024, false)))
	// duel_select_rounds (sm_80): against memory.DUEL, and its device
	// state against duel_select_shared's bit for bit, with its own cap and
	// with small ones (rounds that end early, their undo).
	if d.Capability() >= 80 {
		residentStream(t, "resident-rounds1024", append(slices.Clone(residentCases), big[len(big)/2]), openSelect(d, 1024, SelectRounds, nil, "duel_select_rounds")) // the benchmark's K 4096 (K 1000 when sanitizing)
		residentStream(t, "resident-rounds256-cap3", residentCases, openRounds(d, 256, 3))
		twin := []duelCase{{100, 37, 12}, {300, 150, 9}}
		if !sanitizing() {
			twin = append(twin, duelCase{4096, 256, 128})
		}
		twinSelect(t, "twin-rounds", d, twin, 1024, SelectRounds, "duel_select_rounds", 0)
		twinSelect(t, "twin-rounds-cap5", d, twin[:2], 512, SelectRounds, "duel_select_rounds", 5)
		// The lean kernels (sm_80), at each block size: against
		// memory.DUEL on resident streams, and bit for bit against
		// duel_select_shared; the benchmark's shape and the prefetch at
		// 512 threads (the default block).
		for _, l := range leanKernels {
			if l.nt != leanAutoBlock {
				residentStream(t, "resident-"+l.name, residentCases, openSelect(d, l.nt, SelectLean, nil, l.name))
				twinSelect(t, "twin-"+l.name, d, twin[:2], l.nt, SelectLean, l.name, 0)
				continue
			}
			cases := append(slices.Clone(residentCases), big[len(big)/2])
			residentStream(t, "resident-"+l.name, cases, openSelect(d, l.nt, SelectLean, nil, l.name))
			residentStream(t, "resident-"+l.name+"-prefetch", cases, openPrefetch(openSelect(d, l.nt, SelectLean, nil, l.name)))
			twinSelect(t, "twin-"+l.name, d, twin, l.nt, SelectLean, l.name, 0)
		}
	}
	// duel_select_cluster (sm_90): against memory.DUEL, and its device
	// state against duel_select_shared's bit for bit, on small shapes and
	// on a real memory's.
	if d.Capability() < clusterCapability {
		t.Logf("%v: compute capability %d: duel_select_cluster (sm_90) not tested", d, d.Capability())
		return
	}
	for _, bs := range []int{0, 64, 1024} {
		cases := residentCases
		if bs == 0 {
			cases = append(slices.Clone(residentCases), big...)
		}
		residentStream(t, fmt.Sprintf("resident-cluster%d", bs), cases, openSelect(d, bs, SelectCluster, nil, "duel_select_cluster"))
	}
	twin := slices.Clone(duelCases)
	if !sanitizing() {
		twin = append(twin, duelCase{4096, 256, 128})
	}
	twinStream(t, "twin-cluster", d, twin, 0)
	// duel_select_rounds8 (sm_90): the same, with 16 candidates a block
	// and with 2 (rounds that end early).
	residentStream(t, "resident-rounds8", append(slices.Clone(residentCases), big[len(big)/2]), openSelect(d, 1024, SelectRounds8, nil, "duel_select_rounds8"))
	twin8 := []duelCase{{100, 37, 12}, {300, 150, 9}}
	if !sanitizing() {
		twin8 = append(twin8, duelCase{4096, 256, 128})
	}
	twinSelect(t, "twin-rounds8", d, twin8, 1024, SelectRounds8, "duel_select_rounds8", 0)
	twinSelect(t, "twin-rounds8-cap2", d, twin8[:2], 256, SelectRounds8, "duel_select_rounds8", 2)
}

func TestDUELBadInput(t *testing.T) {
	row := []float32{0.6, 0.8}
	tests := []struct {
		name       string
		mem, batch []float32
		z          int
		opt        Options
		want       string
	}{
		{"zero z", row, row, 0, Options{}, "row length 0"},
		{"empty memory", nil, row, 2, Options{}, "memory of 0 values"},
		{"ragged memory", row[:1], row, 2, Options{}, "memory of 1 values"},
		{"ragged batch", row, row[:1], 2, Options{}, "batch of 1 values"},
		{"admission", row, row, 2, Options{Admission: 7}, "admission mode 7"},
		{"scores", row, row, 2, Options{Scores: []float64{1, 2}}, "2 carried scores for 1 rows"},
		{"block", row, row, 2, Options{BlockSize: 48}, "block size 48"},
		{"off-grid score", row, row, 2, Options{Scores: []float64{0.75 + 0x1p-30}}, "carried score 0"},
		{"big score", row, row, 2, Options{Scores: []float64{0.5 + 2}}, "carried score 0"},
		{"nan score", row, row, 2, Options{Scores: []float64{math.NaN()}}, "carried score 0"},
		{"big block", row, row, 2, Options{BlockSize: 2048}, "block size 2048"},
		{"nan", row, []float32{float32(math.NaN()), 0}, 2, Options{}, "batch row 0 column 0 is NaN"},
		{"not unit", []float32{3, 0}, row, 2, Options{}, "memory row 0 column 0 is 3"},
		{"no device", row, row, 2, Options{}, "no device"},
	}
	for _, tc := range tests {
		_, err := Update(nil, tc.mem, tc.batch, tc.z, tc.opt)
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
	s := duelHost(mem, nil, 64, Options{}).Scores
	for b.Loop() {
		duelHost(mem, batch, 64, Options{Scores: s})
	}
}

// benchStream returns BenchmarkDUELKernel's memory and its pool of 8
// batches for shape c (rand PCG(1, 2): the first draws of the rows).
func benchStream(c duelCase) (mem []float32, pool [][]float32, r *rand.Rand) {
	r = rand.New(rand.NewPCG(1, 2))
	mem = unitRows(r, c.k, c.z, nil)
	for range 8 {
		pool = append(pool, unitRows(r, c.b, c.z, nil))
	}
	return mem, pool, r
}

// TestDUELKernelStreamMoves checks the premise of BenchmarkDUELKernel's
// permute phase (docs/cuda.md, "The phases around the selection"): on
// its stream memory.DUEL (Protected) keeps every batch row in every
// update, so that each update moves B rows and the phase's figures at
// K 4096 and K 2048 compare the same work (24 updates at each shape).
func TestDUELKernelStreamMoves(t *testing.T) {
	if testing.Short() {
		t.Skip("24 updates of memory.DUEL at K 4096 and 2048")
	}
	for _, c := range []duelCase{{4096, 256, 128}, {2048, 256, 256}} {
		mem, pool, _ := benchStream(c)
		policy := memory.NewDUEL(memory.Protected)
		for u := range 24 {
			batch := pool[u%len(pool)]
			ev, err := policy.Evict(&memory.Arrival{Memory: mem, Batch: batch, Z: c.z})
			if err != nil {
				t.Fatal(err)
			}
			kept := keptAfter(ev, c.k)
			moves := 0
			for _, p := range kept {
				if p >= c.k {
					moves++
				}
			}
			if moves != c.b {
				t.Fatalf("K %d update %d: %d batch rows kept, the benchmark's premise is all %d", c.k, u, moves, c.b)
			}
			mem = keptRows(mem, batch, kept, c.k, c.z)
		}
	}
}

// BenchmarkDUELKernel measures steady-state updates of a Memory on the
// GPU (GPU only): the memory loaded once, then batches from a pool of 8,
// scores and block carried; at the shape of PyTorch's figure
// (bench/gpu_peer.py: K 4096, B 256, Z 128) and at duel/memory's CPU
// benchmark's (K 2048, B 256, Z 256), for three block sizes of the
// one-block selection, two of them again with each step prefetching the
// runners-up's rows (blockNprefetch: MemoryOptions.Prefetch), and for
// duel_select_cluster (its default block, a thread per slot of a block,
// and 1024), duel_select_rounds (roundsN) and duel_select_rounds8
// (rounds8, a cluster of eight blocks of 1024; both also report their
// statistics of the last update, rounds, steps replayed, margin probes and each phase's
// clock64 cycles as us at the peak clock). The pool's 8 batches recur,
// so after 8 updates each batch row is a copy of a row the memory may
// hold (duplicates: the rounds' worst case, since a row's copy lifts a
// row outside the round's candidates to the top); rounds1024fresh and
// rounds8fresh draw from 128 batches that no run of the benchmark
// repeats (a new, unrelated batch each update). ns/op is the wall time of
// an update as a run makes it (no events recorded); then 20 more updates
// report each phase in ms/op (device time between events recorded on the
// stream around it, so they add up to a little more than ns/op): check
// (the device's wait for the host's check of the batch, beyond the
// previous update's move), upload (batch copy and grid), dots (duel_dots:
// the batch's rows and columns of sim and its sums), select (the B steps: in one
// block, blockN, or, clusterN, in duel_select_cluster's cluster of eight
// blocks, sm_90 only, or leanN, duel_lean.cu's keys in registers, sm_80
// on), download (evicted, copied back before the move is queued),
// permute (duel_move: the kept batch rows' grid rows and similarity rows
// and columns into their slots; named as in docs/cuda.md's figures).
// Without the events (ns/op) the move overlaps the host's work until the
// next update. auto is SelectAuto once its measurement has decided
// (before the timing): it logs the kernel chosen and reports both
// kernels' median selections (auto-lean-ms, auto-block-ms).
func BenchmarkDUELKernel(b *testing.B) {
	d := needGPU(b)
	for _, c := range []duelCase{{4096, 256, 128}, {2048, 256, 256}} {
		mem, pool, r := benchStream(c)
		var fresh [][]float32 // fresh: batches that no update repeats (made on first use)
		for _, v := range []struct {
			name     string
			bs       int
			sel      Selection
			prefetch bool
			fresh    bool
		}{
			{"block256", 256, SelectBlock, false, false}, {"block512", 512, SelectBlock, false, false}, {"block1024", 1024, SelectBlock, false, false},
			{"block1024prefetch", 1024, SelectBlock, true, false}, {"block512prefetch", 512, SelectBlock, true, false},
			{"cluster", 0, SelectCluster, false, false}, {"cluster1024", 1024, SelectCluster, false, false},
			{"rounds1024", 1024, SelectRounds, false, false}, {"rounds512", 512, SelectRounds, false, false},
			{"rounds8", 1024, SelectRounds8, false, false},
			{"rounds1024fresh", 1024, SelectRounds, false, true}, {"rounds8fresh", 1024, SelectRounds8, false, true},
			{"lean512", 512, SelectLean, false, false}, {"lean1024", 1024, SelectLean, false, false}, {"lean512prefetch", 512, SelectLean, true, false},
			{"auto", 0, SelectAuto, false, false},
			// MoveGather: duel_gather instead of duel_move (the permute
			// phase); automove: MoveAuto, the default, measuring both.
			{"block1024gather", 1024, SelectBlock, false, false}, {"lean512gather", 512, SelectLean, false, false}, {"autogather", 0, SelectAuto, false, false},
			{"automove", 0, SelectAuto, false, false},
		} {
			b.Run(fmt.Sprintf("K%d_B%d_Z%d/%s", c.k, c.b, c.z, v.name), func(b *testing.B) {
				if (v.sel == SelectCluster || v.sel == SelectRounds8) && d.Capability() < clusterCapability {
					b.Skipf("%v: compute capability %d, thread-block clusters need %d", d, d.Capability(), clusterCapability)
				}
				if (v.sel == SelectRounds || v.sel == SelectLean) && d.Capability() < 80 {
					b.Skipf("%v: compute capability %d, %v needs 8.0", d, d.Capability(), v.sel)
				}
				move := MoveScatter
				switch {
				case strings.HasSuffix(v.name, "gather"):
					move = MoveGather
				case strings.HasSuffix(v.name, "automove"):
					move = MoveAuto
				}
				m, err := NewMemory(d, c.k, c.z, MemoryOptions{BlockSize: v.bs, Batch: c.b, Selection: v.sel, Prefetch: v.prefetch, Move: move})
				if err != nil {
					b.Fatal(err)
				}
				defer m.Close()
				want := map[Selection]string{SelectBlock: "duel_select_shared", SelectCluster: "duel_select_cluster", SelectRounds: "duel_select_rounds",
					SelectRounds8: "duel_select_rounds8", SelectLean: fmt.Sprintf("duel_select_lean%d", v.bs)}[v.sel]
				m.check = func(ran string) error {
					if v.sel != SelectAuto && ran != want {
						return fmt.Errorf("the update ran %s, want %s (shared memory: %d bytes for the cluster's blocks, %d for one block)", ran, want, m.cshared, m.shared)
					}
					return nil
				}
				if err := m.Load(mem, nil); err != nil {
					b.Fatal(err)
				}
				pool := pool
				if v.fresh {
					for len(fresh) < 128 {
						fresh = append(fresh, unitRows(r, c.b, c.z, nil))
					}
					pool = fresh
				}
				for i := range 3 { // warm-up: modules loaded, caches filled
					if _, err := m.Update(pool[i]); err != nil {
						b.Fatal(err)
					}
				}
				if v.sel == SelectAuto { // SelectAuto's (and MoveAuto's) measurement done before the timing
					for i := 0; (!m.AutoTune().Decided && m.AutoTune().LeanOff == nil || move == MoveAuto && !m.MoveTune().Decided) && i < 5*tuneSamples; i++ {
						if _, err := m.Update(pool[i%len(pool)]); err != nil {
							b.Fatal(err)
						}
					}
					a := m.AutoTune()
					b.Logf("SelectAuto on %v: %s, prefetch %v (the lean kernel's median selection %v, with the prefetch %v, the one-block kernel's %v; lean off: %v)", d, a.Kernel, a.Prefetch, a.Lean, a.LeanPrefetch, a.Block, a.LeanOff)
					b.ReportMetric(float64(a.Lean)/1e6, "auto-lean-ms")
					b.ReportMetric(float64(a.LeanPrefetch)/1e6, "auto-leanpf-ms")
					b.ReportMetric(float64(a.Block)/1e6, "auto-block-ms")
					if mt := m.MoveTune(); move == MoveAuto {
						b.Logf("MoveAuto on %v: %v (median move: scatter %v, gather %v; gather off: %v)", d, mt.Move, mt.Scatter, mt.Gather, mt.GatherOff)
						b.ReportMetric(float64(mt.Scatter)/1e6, "auto-scatter-ms")
						b.ReportMetric(float64(mt.Gather)/1e6, "auto-gather-ms")
					}
				}
				i := 0
				for b.Loop() { // the updates as a run makes them: no events between the phases
					if _, err := m.Update(pool[i%len(pool)]); err != nil {
						b.Fatal(err)
					}
					i++
				}
				// The phases, from device events around each (their own
				// cost, a few microseconds each, is not in ns/op).
				const timed = 20
				m.timing = &duelTiming{}
				for j := range timed {
					if _, err := m.Update(pool[(i+j)%len(pool)]); err != nil {
						b.Fatal(err)
					}
				}
				tm, n := m.timing, float64(timed)*1e6
				b.ReportMetric(float64(tm.check)/n, "check-ms/op")
				b.ReportMetric(float64(tm.upload)/n, "upload-ms/op")
				b.ReportMetric(float64(tm.dots)/n, "dots-ms/op")
				b.ReportMetric(float64(tm.selection)/n, "select-ms/op")
				b.ReportMetric(float64(tm.permute)/n, "permute-ms/op")
				b.ReportMetric(float64(tm.download)/n, "download-ms/op")
				if v.sel == SelectLean { // one more update, warp 0 timing its parts
					m.leanTimed = true
					if _, err := m.Update(pool[i%len(pool)]); err != nil {
						b.Fatal(err)
					}
					st, err := m.leanStats()
					if err != nil {
						b.Fatal(err)
					}
					if khz := float64(d.ClockKHz()); khz > 0 { // at the peak clock: a lower bound on the time
						for _, p := range []struct {
							name   string
							cycles int64
						}{{"prologue", st.prologue}, {"wait", st.wait}, {"update", st.update}, {"reduce", st.reduce}, {"kernel", st.total}} {
							b.ReportMetric(float64(p.cycles)/khz*1e3, p.name+"-us")
						}
					}
				}
				if v.sel == SelectRounds || v.sel == SelectRounds8 {
					st, err := m.roundStats() // the last update's
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(st.rounds), "rounds/update")
					b.ReportMetric(float64(st.replayed), "replayed/update")
					b.ReportMetric(float64(st.probes), "probes/update")
					if khz := float64(d.ClockKHz()); khz > 0 { // thread 0's cycles at the peak clock: a lower bound on the time
						for _, p := range []struct {
							name   string
							cycles int64
						}{{"cand", st.candidates}, {"gather", st.gather}, {"replay", st.replay}, {"check", st.check}, {"kernel", st.total}} {
							b.ReportMetric(float64(p.cycles)/khz*1e3, p.name+"-us")
						}
					}
				}
			})
		}
	}
}

// BenchmarkDUELMemoryOnHost measures Memory's Go side with the
// kernels' Go transcriptions (cudatest.Host), at a small shape: a check that the
// benchmark's path runs, not a figure.
func BenchmarkDUELMemoryOnHost(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	m, err := NewMemory(newHost(), 64, 16, MemoryOptions{Batch: 16})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	if err := m.Load(unitRows(r, 64, 16, nil), nil); err != nil {
		b.Fatal(err)
	}
	batch := unitRows(r, 16, 16, nil)
	m.timing = &duelTiming{}
	for b.Loop() {
		if _, err := m.Update(batch); err != nil {
			b.Fatal(err)
		}
	}
}

// keptRows returns the memory after an update: the rows at positions kept
// (below k the memory's rows mem, from k on the batch's rows), z floats
// each, in that order.
func keptRows(mem, batch []float32, kept []int, k, z int) []float32 {
	next := make([]float32, 0, len(mem))
	for _, p := range kept {
		if p < k {
			next = append(next, mem[p*z:(p+1)*z]...)
		} else {
			next = append(next, batch[(p-k)*z:(p-k+1)*z]...)
		}
	}
	return next
}

// TestAutoBlock: the selection's default block size, about four positions
// a thread, a power of two in 256..1024 (the H100's best at the two
// benchmarked shapes).
func TestAutoBlock(t *testing.T) {
	for _, tc := range []struct{ n, want int }{
		{1, 256}, {1024, 256}, {2047, 256}, {2048, 512}, {2304, 512}, {4095, 512}, {4096, 1024}, {4352, 1024}, {1 << 18, 1024},
	} {
		if got := autoBlock(tc.n); got != tc.want {
			t.Errorf("autoBlock(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}

// sanitizing reports whether the GPU tests run under compute-sanitizer
// (bench/gpu_check.sh run-sanitize sets DUEL_GPU_SMALL): they then leave
// out their largest memories, which the tools slow down a hundredfold.
func sanitizing() bool { return os.Getenv("DUEL_GPU_SMALL") != "" }
