package cudaduel

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/cuda/driver"
	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/internal/cudatest"
	kc "github.com/duel-ssl/duel/kernels/cuda"
)

// openSelect returns an opener of Memory on g with the given block size
// and selection; with limit > 0 duel_select_cluster may use limit(k, z)
// bytes of shared memory (the fit's boundary), and want, when not empty,
// is the selection kernel every update must run.
func openSelect(g cuda.GPU, block int, sel Selection, limit func(k, z int) int, want string) func(k, z int, adm memory.Admission) (*Memory, error) {
	return func(k, z int, adm memory.Admission) (*Memory, error) {
		m, err := NewMemory(g, k, z, MemoryOptions{Admission: adm, BlockSize: block, Batch: 2, Selection: sel})
		if err == nil && limit != nil {
			m.cshared = limit(k, z)
		}
		if err == nil && want != "" {
			m.check = func(ran string) error {
				if ran != want {
					return fmt.Errorf("the update ran %s, want %s", ran, want)
				}
				return nil
			}
		}
		return m, err
	}
}

// updateSelect is Update with a Memory of the given block size and
// selection, whose updates must run kernel want.
func updateSelect(g cuda.GPU, block int, sel Selection, want string) func(mem, batch []float32, z int, opt Options) (Result, error) {
	return func(mem, batch []float32, z int, opt Options) (Result, error) {
		k, b, _, err := checkDUEL(mem, batch, z, opt)
		if err != nil {
			return Result{}, err
		}
		m, err := openSelect(g, block, sel, nil, want)(k, z, opt.Admission)
		if err != nil {
			return Result{}, err
		}
		defer m.Close()
		if err := m.Load(mem, opt.Scores); err != nil {
			return Result{}, err
		}
		if b > m.bcap {
			if err := m.grow(b); err != nil {
				return Result{}, err
			}
		}
		res, err := m.Update(batch)
		if err != nil {
			return Result{}, err
		}
		res.Scores, err = m.Scores()
		return res, err
	}
}

// twinStream runs two Memories on g through the same stream of batches
// for every case and admission, one with the one-block selection and one
// with duel_select_cluster (at the given block size), and compares their
// device state after every update bit for bit: the evicted positions,
// the whole slot state (rank, slot, src, moves) and the scores by slot.
func twinStream(t *testing.T, name string, g cuda.GPU, cases []duelCase, block int) {
	twinSelect(t, name, g, cases, block, SelectCluster, "duel_select_cluster", 0)
}

// twinSelect is twinStream against selection sel, whose updates run
// kernel kernel (with capC > 0, duel_select_rounds with that many
// candidates a round).
func twinSelect(t *testing.T, name string, g cuda.GPU, cases []duelCase, block int, sel Selection, kernel string, capC int) {
	for ci, c := range cases {
		for _, adm := range []memory.Admission{memory.Protected, memory.Compete} {
			t.Run(fmt.Sprintf("%s/K%d_B%d_Z%d_%v", name, c.k, c.b, c.z, adm), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(ci)+300, uint64(adm)))
				var ms [2]*Memory
				for i, s := range []Selection{SelectBlock, sel} {
					m, err := NewMemory(g, c.k, c.z, MemoryOptions{Admission: adm, BlockSize: block, Batch: 2*c.b + 1, Selection: s})
					if err != nil {
						t.Fatal(err)
					}
					defer m.Close()
					m.rcap = capC
					h100OptIn(m)
					ms[i] = m
				}
				mem := unitRows(r, c.k, c.z, nil)
				for _, m := range ms {
					if err := m.Load(mem, nil); err != nil {
						t.Fatal(err)
					}
				}
				for step, b := range []int{c.b, 1, 2*c.b + 1, c.b} {
					batch := unitRows(r, b, c.z, mem)
					var got [2]Result
					for i, m := range ms {
						var err error
						if got[i], err = m.Update(batch); err != nil {
							t.Fatal(err)
						}
					}
					// An empty batch selects nothing: no kernel runs (the
					// names are those of an earlier update, if any).
					if b > 0 && (ms[0].ran == kernel || ms[1].ran != kernel) {
						t.Fatalf("step %d: the selections ran %s and %s", step, ms[0].ran, ms[1].ran)
					}
					if !slices.Equal(got[0].Evicted, got[1].Evicted) {
						t.Fatalf("step %d (B %d): %s evicted %v, duel_select_shared %v", step, b, kernel, got[1].Evicted, got[0].Evicted)
					}
					for _, buf := range []struct {
						what string
						p    func(m *Memory) driver.DevicePtr
						n    int
					}{
						{"evicted", func(m *Memory) driver.DevicePtr { return m.ev }, 4 * b},
						{"slot state", func(m *Memory) driver.DevicePtr { return m.slots }, 4 * (3*c.k + b)},
						{"scores", func(m *Memory) driver.DevicePtr { return m.score[m.cur] }, 8 * c.k},
					} {
						var raw [2][]byte
						for i, m := range ms {
							raw[i] = make([]byte, buf.n)
							if err := m.g.CopyFromDevice(raw[i], buf.p(m)); err != nil {
								t.Fatal(err)
							}
						}
						if !slices.Equal(raw[0], raw[1]) {
							t.Fatalf("step %d (B %d): %s's %s differ from duel_select_shared's", step, b, kernel, buf.what)
						}
					}
					mem = keptRows(mem, batch, got[0].Kept, c.k, c.z)
				}
			})
		}
	}
}

// TestDUELClusterEmulated runs duel_select_cluster (duel_cluster.cu, its
// blocks run together as a cluster of eight on the CPU emulator) through
// Memory against memory.DUEL and against duel_select_shared: single
// updates, resident streams, ties, the fit's boundary, and the device
// state of the two kernels compared bit for bit, at several block sizes;
// K not a multiple of the cluster (blocks with fewer slots, or none:
// K+B < 8), K < B, B = 1 and growing batches included.
func TestDUELClusterEmulated(t *testing.T) {
	e := cudatest.NewEmulator(t)
	const cl = "duel_select_cluster"
	small := []duelCase{{1, 1, 1}, {1, 3, 2}, {2, 0, 3}, {3, 5, 4}, {5, 2, 7}, {7, 7, 1}, {16, 4, 8}, {33, 9, 5}, {40, 64, 3}}
	for _, tc := range []struct {
		name  string
		cases []duelCase
		block int
	}{
		{"cluster32", small, 32},
		{"cluster96", small, 96},
		{"cluster64", []duelCase{{64, 16, 17}, {100, 37, 12}}, 64},
		{"clusterAuto", []duelCase{{129, 31, 33}}, 0},
		{"cluster1024", []duelCase{{16, 4, 8}}, 1024}, // all 32 warps' partials, 8192 fibers
	} {
		stream(t, tc.name, tc.cases, updateSelect(e, tc.block, SelectCluster, cl))
	}
	residentStream(t, "resident-cluster32", residentCases, openSelect(e, 32, SelectCluster, nil, cl))
	residentStream(t, "resident-cluster256", []duelCase{{100, 37, 12}}, openSelect(e, 256, SelectCluster, nil, cl))
	// The largest batch of a resident stream (2B+1 rows) exactly at the
	// limit: every update runs the cluster kernel.
	atLimit := func(b int) func(k, z int) int {
		return func(k, z int) int { return clusterShared(k, 2*b+1, z) }
	}
	residentStream(t, "resident-cluster-limit", []duelCase{{70, 13, 9}}, openSelect(e, 64, SelectCluster, atLimit(13), cl))
	// One byte short of it: the one-block kernel.
	m, err := openSelect(e, 64, SelectCluster, func(k, z int) int { return clusterShared(k, 9, z) - 1 }, "duel_select_shared")(20, 4, memory.Compete)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(8, 9))
	if err := m.Load(unitRows(r, 20, 4, nil), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Update(unitRows(r, 9, 4, nil)); err != nil {
		t.Error(err)
	}
	m.Close()

	twinStream(t, "twin32", e, []duelCase{{1, 1, 1}, {2, 0, 3}, {3, 5, 4}, {7, 7, 1}, {33, 9, 5}, {40, 64, 3}}, 32)
	twinStream(t, "twin128", e, []duelCase{{100, 37, 12}}, 128)

	// Ties: copies of one or a few rows, the positions decide.
	for _, c := range []struct{ k, b, z, g int }{{5, 3, 4, 1}, {70, 30, 5, 1}, {70, 30, 5, 3}, {33, 90, 2, 2}} {
		for _, adm := range []memory.Admission{memory.Protected, memory.Compete} {
			name := fmt.Sprintf("ties/K%d_B%d_G%d_%v", c.k, c.b, c.g, adm)
			r := rand.New(rand.NewPCG(uint64(c.k)+7, uint64(c.g)))
			m, err := NewMemory(e, c.k, c.z, MemoryOptions{Admission: adm, BlockSize: 64, Batch: c.b, Selection: SelectCluster})
			if err != nil {
				t.Fatal(err)
			}
			tieSteps(t, name, m, r, c.k, c.b, c.z, c.g, 3, adm, cl)
			m.Close()
		}
	}
}

// TestClusterLayout checks duel_select_cluster's shared memory and block
// size at the benchmark's shape (K 4096, B 256, Z 128: 544 slots a block,
// 153.75 KiB, within an H100's 227 KiB) and that a bad selection or
// EnvSelect is refused.
func TestClusterLayout(t *testing.T) {
	if got, want := clusterShared(4096, 256, 128), 8*544+1024+4*2*8*64+4*544*68; got != want || got > 227<<10 {
		t.Errorf("clusterShared(4096, 256, 128) = %d, want %d (at most 227 KiB)", got, want)
	}
	for _, tc := range []struct{ k, b, want int }{{4096, 256, 544}, {1, 1, 64}, {8000, 200, 1024}, {2048, 256, 288}} {
		if got := clusterBlock(tc.k, tc.b); got != tc.want {
			t.Errorf("clusterBlock(%d, %d) = %d, want %d", tc.k, tc.b, got, tc.want)
		}
	}
	h := newHost()
	if _, err := NewMemory(h, 16, 4, MemoryOptions{Selection: 7}); err == nil {
		t.Error("selection 7 accepted")
	}
	t.Setenv(EnvSelect, "fast")
	if _, err := NewMemory(h, 16, 4, MemoryOptions{}); err == nil || !strings.Contains(err.Error(), EnvSelect) {
		t.Errorf("%s=fast: error %v, want one naming the variable", EnvSelect, err)
	}
}

// TestSelectionKernel checks which kernel each selection (and EnvSelect)
// runs on a GPU that reports no compute capability (cudatest.Host).
func TestSelectionKernel(t *testing.T) {
	h := newHost()
	for _, tc := range []struct {
		sel  Selection
		env  string
		want string
	}{
		{SelectAuto, "", "duel_select_shared"}, {SelectBlock, "", "duel_select_shared"}, {SelectCluster, "", "duel_select_cluster"},
		{SelectAuto, "cluster", "duel_select_cluster"}, {SelectAuto, "block", "duel_select_shared"}, {SelectBlock, "cluster", "duel_select_shared"},
		{SelectRounds, "", "duel_select_rounds"}, {SelectAuto, "rounds", "duel_select_rounds"}, {SelectBlock, "rounds", "duel_select_shared"},
		{SelectRounds8, "", "duel_select_rounds8"}, {SelectAuto, "rounds8", "duel_select_rounds8"}, {SelectRounds, "rounds8", "duel_select_rounds"},
		{SelectLean, "", "duel_select_lean512"}, {SelectAuto, "lean", "duel_select_lean512"}, {SelectBlock, "lean", "duel_select_shared"},
	} {
		if ran := selectionRan(t, h, tc.sel, tc.env); ran != tc.want {
			t.Errorf("selection %v, %s=%q on cudatest.Host (no compute capability): ran %s, want %s", tc.sel, EnvSelect, tc.env, ran, tc.want)
		}
	}
}

// selectionRan returns the selection kernel an update of a 16-row memory
// on g runs with selection sel and EnvSelect set to env.
func selectionRan(t *testing.T, g cuda.GPU, sel Selection, env string) string {
	t.Helper()
	t.Setenv(EnvSelect, env)
	m, err := NewMemory(g, 16, 4, MemoryOptions{Batch: 4, Selection: sel})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	r := rand.New(rand.NewPCG(1, 1))
	if err := m.Load(unitRows(r, 16, 4, nil), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Update(unitRows(r, 4, 4, nil)); err != nil {
		t.Fatal(err)
	}
	return m.ran
}

// TestClusterRefused: when the driver refuses the launch of a cluster
// kernel (duel_select_cluster, duel_select_rounds8), the update runs the
// one-block kernel instead (same decisions), and so do the later ones,
// the reason kept (clusterErr, rounds8Err).
func TestClusterRefused(t *testing.T) {
	for _, tc := range []struct {
		kernel string
		sel    Selection
		reason func(m *Memory) error
	}{
		{"duel_select_cluster", SelectCluster, func(m *Memory) error { return m.clusterErr }},
		{"duel_select_rounds8", SelectRounds8, func(m *Memory) error { return m.rounds8Err }},
	} {
		h := newHost()
		h.Register(tc.kernel, func(*cudatest.Host, kc.Config, cudatest.Args) error {
			return errors.New("CUDA_ERROR_CLUSTER_OUT_OF_RESOURCES")
		})
		r := rand.New(rand.NewPCG(4, 4))
		m, err := NewMemory(h, 24, 6, MemoryOptions{Batch: 5, Selection: tc.sel})
		if err != nil {
			t.Fatal(err)
		}
		mem := unitRows(r, 24, 6, nil)
		if err := m.Load(mem, nil); err != nil {
			t.Fatal(err)
		}
		policy := memory.NewDUEL(memory.Protected)
		for step := range 2 {
			mem = updateLikeDUEL(t, fmt.Sprintf("%s refused, step %d", tc.kernel, step), m, policy, mem, unitRows(r, 5, 6, mem))
			if m.ran != "duel_select_shared" || tc.reason(m) == nil {
				t.Fatalf("%s refused, step %d: ran %s (reason %v), want duel_select_shared", tc.kernel, step, m.ran, tc.reason(m))
			}
		}
		m.Close()
	}
}

// TestPrefetchOption checks MemoryOptions.Prefetch and DUEL_CUDADUEL_PREFETCH
// (the environment turns it on, never off), that a memory with it makes
// the same decisions on cudatest.Host (whose transcription reads the
// flags' protect bit), and that a bad value of the variable is an error
// naming it.
func TestPrefetchOption(t *testing.T) {
	h := newHost()
	var want []int
	for _, tc := range []struct {
		opt  bool
		env  string
		want bool
	}{{false, "", false}, {true, "", true}, {false, "1", true}, {true, "0", true}, {false, "0", false}} {
		t.Setenv(EnvPrefetch, tc.env)
		m, err := NewMemory(h, 16, 4, MemoryOptions{Batch: 4, Admission: memory.Protected, Prefetch: tc.opt})
		if err != nil {
			t.Fatal(err)
		}
		if m.prefetch != tc.want {
			t.Errorf("Prefetch %v, %s=%q: prefetch %v, want %v", tc.opt, EnvPrefetch, tc.env, m.prefetch, tc.want)
		}
		r := rand.New(rand.NewPCG(1, 1))
		if err := m.Load(unitRows(r, 16, 4, nil), nil); err != nil {
			t.Fatal(err)
		}
		res, err := m.Update(unitRows(r, 4, 4, nil))
		if err != nil {
			t.Fatal(err)
		}
		if want == nil {
			want = res.Evicted
		} else if !slices.Equal(res.Evicted, want) {
			t.Errorf("Prefetch %v, %s=%q: evicted %v, want %v", tc.opt, EnvPrefetch, tc.env, res.Evicted, want)
		}
		m.Close()
	}
	t.Setenv(EnvPrefetch, "yes")
	if _, err := NewMemory(h, 16, 4, MemoryOptions{}); err == nil || !strings.Contains(err.Error(), EnvPrefetch) {
		t.Errorf("%s=yes: error %v, want one naming the variable", EnvPrefetch, err)
	}
}
