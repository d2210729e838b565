package cudaduel

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/cuda/driver"
	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/internal/cudatest"
	kc "github.com/duel-ssl/duel/kernels/cuda"
)

// openGather is openResident with MemoryOptions.Move = MoveGather.
func openGather(g cuda.GPU, block int, global bool) func(k, z int, adm memory.Admission) (*Memory, error) {
	return func(k, z int, adm memory.Admission) (*Memory, error) {
		m, err := NewMemory(g, k, z, MemoryOptions{Admission: adm, BlockSize: block, Batch: 2, Move: MoveGather})
		if err == nil && global {
			m.shared = 0
		}
		return m, err
	}
}

// TestDUELGatherOnHost runs resident streams with MoveGather on the Go
// transcriptions of the kernels (every machine): the same decisions and
// carried scores as memory.DUEL, through growing batches and reloads, and
// every buffer (the second similarity matrix included) freed.
func TestDUELGatherOnHost(t *testing.T) {
	h := newHost()
	residentStream(t, "hostgpu-gather32", residentCases, openGather(h, 32, false))
	residentStream(t, "hostgpu-gather64-global", residentCases, openGather(h, 64, true))
	if n := h.Live(); n != 0 {
		t.Errorf("%d device allocations left after the updates, want 0", n)
	}
}

// TestMoveOptions checks MemoryOptions.Move and EnvMove (which applies
// to MoveAuto only): auto and gather allocate the second matrix, a bad
// value of either is refused, naming it.
func TestMoveOptions(t *testing.T) {
	h := newHost()
	for _, tc := range []struct {
		opt  Move
		env  string
		want Move
	}{
		{MoveAuto, "", MoveAuto}, {MoveAuto, "auto", MoveAuto}, {MoveAuto, "scatter", MoveScatter}, {MoveAuto, "gather", MoveGather},
		{MoveGather, "", MoveGather}, {MoveScatter, "gather", MoveScatter},
	} {
		t.Setenv(EnvMove, tc.env)
		m, err := NewMemory(h, 16, 4, MemoryOptions{Move: tc.opt})
		if err != nil {
			t.Fatal(err)
		}
		if m.Move() != tc.want || (m.sim2 != 0) != (tc.want != MoveScatter) {
			t.Errorf("Move %v, %s=%q: move %v (second matrix %v), want %v", tc.opt, EnvMove, tc.env, m.Move(), m.sim2 != 0, tc.want)
		}
		m.Close()
	}
	t.Setenv(EnvMove, "sideways")
	if _, err := NewMemory(h, 16, 4, MemoryOptions{}); err == nil || !strings.Contains(err.Error(), EnvMove) {
		t.Errorf("%s=sideways: error %v, want one naming the variable", EnvMove, err)
	}
	t.Setenv(EnvMove, "")
	if _, err := NewMemory(h, 16, 4, MemoryOptions{Move: 9}); err == nil || !strings.Contains(err.Error(), "move 9") {
		t.Errorf("Move 9: error %v, want one naming it", err)
	}
	if MoveAuto.String() != "auto" || MoveScatter.String() != "scatter" || MoveGather.String() != "gather" || Move(9).String() != "Move(9)" {
		t.Errorf("Move names: %v %v %v %v", MoveAuto, MoveScatter, MoveGather, Move(9))
	}
}

// moveCase is a random next layout for duel_move and duel_gather: sim
// symmetric over its K+B slots (junk past them in each row of W), grid
// rows, and kept's src and moves for m batch rows moving into m random
// freed slots.
type moveCase struct {
	k, b, z, w, m int
	sim           []int32
	grid          []float32
	kept          []int32
}

func newMoveCase(r *rand.Rand, k, b, z, extra, m int) moveCase {
	n := k + b
	c := moveCase{k: k, b: b, z: z, w: n + extra, m: m}
	c.sim = make([]int32, n*c.w+1)
	for i := range c.sim {
		c.sim[i] = int32(r.IntN(1<<25) - 1<<24)
	}
	for i := range n {
		for j := range i {
			c.sim[j*c.w+i] = c.sim[i*c.w+j]
		}
	}
	c.grid = make([]float32, n*z)
	for i := range c.grid {
		c.grid[i] = float32(r.IntN(4097) - 2048)
	}
	c.kept = make([]int32, 3*k+max(b, 1))
	src, moves := c.kept[2*k:3*k], c.kept[3*k:]
	for t := range src {
		src[t] = int32(t)
	}
	freed, from := r.Perm(k)[:m], r.Perm(b)[:m]
	slices.Sort(freed)
	for j := range moves {
		moves[j] = -1
	}
	for j, s := range freed {
		src[s], moves[j] = int32(k+from[j]), int32(s)
	}
	for i := range c.kept[:2*k] {
		c.kept[i] = int32(r.IntN(1 << 20)) // rank and slot: not read
	}
	return c
}

// TestDUELGatherEmulated runs duel_gather (duel.cu on the CPU emulator)
// on random next layouts of odd shapes (K 0 included), narrowed grids included, and
// compares with its Go transcription (every value of out and grid) and
// with duel_move's result on the same layout (the K x K block and the
// grid rows held: the same bits).
func TestDUELGatherEmulated(t *testing.T) {
	e := cudatest.NewEmulator(t)
	r := rand.New(rand.NewPCG(7, 11))
	for _, tc := range []struct{ k, b, z, extra, m, gx, gy int }{
		{0, 3, 2, 1, 0, 1, 1}, {1, 1, 1, 0, 1, 1, 1}, {1, 1, 1, 3, 0, 1, 1}, {5, 3, 7, 2, 3, 1, 2}, {33, 9, 5, 1, 9, 1, 33},
		{100, 37, 12, 5, 20, 1, 7}, {257, 64, 130, 0, 64, 2, 9}, {300, 1, 3, 2, 1, 1, 5}, {40, 64, 3, 0, 40, 1, 40},
	} {
		c := newMoveCase(r, tc.k, tc.b, tc.z, tc.extra, tc.m)
		out := make([]int32, len(c.sim))
		for i := range out {
			out[i] = int32(r.Uint32())
		}
		wantOut, wantGrid := slices.Clone(out), slices.Clone(c.grid)
		duelGatherHost(c.sim, wantOut, c.w, wantGrid, c.z, c.k, c.kept)
		moved, movedGrid := slices.Clone(c.sim), slices.Clone(c.grid)
		duelMoveHost(moved, c.w, movedGrid, c.z, c.k, c.b, c.kept)
		for s := range c.k {
			if !slices.Equal(wantOut[s*c.w:s*c.w+c.k], moved[s*c.w:s*c.w+c.k]) {
				t.Fatalf("K %d B %d: duelGatherHost's row %d differs from duelMoveHost's", c.k, c.b, s)
			}
		}
		if !slices.Equal(wantGrid[:c.k*c.z], movedGrid[:c.k*c.z]) {
			t.Fatalf("K %d B %d: duelGatherHost's grid rows differ from duelMoveHost's", c.k, c.b)
		}

		var ptrs [4]driver.DevicePtr
		for i, buf := range [][]byte{cuda.Bytes(c.sim), cuda.Bytes(out), cuda.Bytes(c.grid), cuda.Bytes(c.kept)} {
			p, err := e.Alloc(len(buf))
			if err != nil {
				t.Fatal(err)
			}
			if err := e.CopyToDevice(p, buf); err != nil {
				t.Fatal(err)
			}
			ptrs[i] = p
		}
		cfg := kc.Config{Grid: driver.Dim3{X: tc.gx, Y: tc.gy, Z: 1}, Block: driver.Dim3{X: 64, Y: 1, Z: 1}}
		if err := kc.DuelGather(e, cfg, ptrs[0], ptrs[1], int64(c.w), ptrs[2], int32(c.z), int32(c.k), ptrs[3]); err != nil {
			t.Fatal(err)
		}
		gotOut, gotGrid := make([]int32, len(out)), make([]float32, len(c.grid))
		if err := e.CopyFromDevice(cuda.Bytes(gotOut), ptrs[1]); err != nil {
			t.Fatal(err)
		}
		if err := e.CopyFromDevice(cuda.Bytes(gotGrid), ptrs[2]); err != nil {
			t.Fatal(err)
		}
		for _, p := range ptrs {
			e.Free(p)
		}
		if i := firstDiff(gotOut, wantOut); i < len(gotOut) {
			t.Errorf("K %d B %d Z %d W %d, grid %dx%d: out[%d] = %d, want %d", c.k, c.b, c.z, c.w, tc.gx, tc.gy, i, gotOut[i], wantOut[i])
		}
		if i := firstDiff(gotGrid, wantGrid); i < len(gotGrid) {
			t.Errorf("K %d B %d Z %d, grid %dx%d: grid[%d] = %v, want %v", c.k, c.b, c.z, tc.gx, tc.gy, i, gotGrid[i], wantGrid[i])
		}
	}

	residentStream(t, "resident96-gather", residentCases, openGather(e, 96, false))
	residentStream(t, "resident256-global-gather", []duelCase{{100, 37, 12}}, openGather(e, 256, true))
	t.Run("env", func(t *testing.T) { // the lean kernel, MoveGather from EnvMove
		t.Setenv(EnvMove, "gather")
		residentStream(t, "resident-lean128-gather", []duelCase{{33, 9, 5}, {300, 150, 9}}, openSelect(e, 128, SelectLean, nil, "duel_select_lean128"))
	})
}

// TestMoveAutoOnHost runs MoveAuto on the Go transcriptions with each way
// made the faster (moveClock): it measures from the second update at the
// first batch size, alternating, decides for the faster after
// moveSamples of each, then runs only that one (a decision for scatter
// freeing the second matrix); every update's decisions are memory.DUEL's.
func TestMoveAutoOnHost(t *testing.T) {
	for _, faster := range []Move{MoveScatter, MoveGather} {
		h := newHost()
		m, atDecision := moveAutoStream(t, h, func(mv Move, _ time.Duration) time.Duration {
			if mv == faster {
				return time.Microsecond
			}
			return time.Millisecond
		})
		mt := m.MoveTune()
		if !mt.Decided || mt.Move != faster || m.Move() != faster || mt.GatherOff != nil {
			t.Errorf("faster %v: MoveTune %+v, Move %v", faster, mt, m.Move())
		}
		// After the decision only the faster way moves.
		slower := 1
		if faster == MoveGather {
			slower = 0
		}
		if now := [2]int{m.mtune.scatterN, m.mtune.gatherN}; now[slower] != atDecision[slower] || now[1-slower] == atDecision[1-slower] {
			t.Errorf("faster %v: moves (scatter, gather) %v at the decision, %v after", faster, atDecision, now)
		}
		if (m.sim2 != 0) != (faster == MoveGather) {
			t.Errorf("faster %v: second matrix allocated %v", faster, m.sim2 != 0)
		}
		m.Close()
		if n := h.Live(); n != 0 {
			t.Errorf("faster %v: %d device allocations left", faster, n)
		}
	}
}

// moveAutoStream runs 18 updates of a MoveAuto memory (K 40, batches of
// 9, one of 4) on g, with clock as its moveClock, checking each against
// memory.DUEL and the carried scores at the end, and the samples taken.
// It returns the memory and the moves of each way (scatter, gather) run
// when the measurement decided.
func moveAutoStream(t *testing.T, g cuda.GPU, clock func(Move, time.Duration) time.Duration) (*Memory, [2]int) {
	t.Helper()
	const k, z, b = 40, 5, 9
	m, err := NewMemory(g, k, z, MemoryOptions{Batch: b})
	if err != nil {
		t.Fatal(err)
	}
	m.moveClock = clock
	r := rand.New(rand.NewPCG(5, 6))
	mem := unitRows(r, k, z, nil)
	if err := m.Load(mem, nil); err != nil {
		t.Fatal(err)
	}
	policy := memory.NewDUEL(memory.Protected)
	var atDecision [2]int
	for u := range 18 {
		n := b
		if u == 3 {
			n = 4 // another batch size: moved by scatter, not sampled
		}
		mem = updateLikeDUEL(t, fmt.Sprintf("update %d", u), m, policy, mem, unitRows(r, n, z, mem))
		if m.MoveTune().Decided && atDecision == [2]int{} {
			atDecision = [2]int{m.mtune.scatterN, m.mtune.gatherN}
		}
	}
	if len(m.mtune.scatter) != moveSamples || len(m.mtune.gather) != moveSamples {
		t.Errorf("%d scatter and %d gather samples, want %d each", len(m.mtune.scatter), len(m.mtune.gather), moveSamples)
	}
	scores, err := m.Scores()
	if err != nil {
		t.Fatal(err)
	}
	if fresh := duelHost(mem, nil, z, Options{}); !slices.Equal(scores, fresh.Scores) {
		t.Errorf("carried scores differ from recomputed")
	}
	return m, atDecision
}

// twinlessGPU is a cudatest.Host whose second allocation of size bytes
// fails: the second similarity matrix, when size is sim's.
type twinlessGPU struct {
	*cudatest.Host
	size, seen int
}

func (g *twinlessGPU) Alloc(n int) (driver.DevicePtr, error) {
	if n == g.size {
		if g.seen++; g.seen == 2 {
			return 0, errors.New("out of memory (test)")
		}
	}
	return g.Host.Alloc(n)
}

// TestMoveWithoutTwin checks the second matrix's allocation failing:
// MoveAuto settles on MoveScatter, the reason kept, and its updates stay
// memory.DUEL's; MoveGather is refused, naming the matrix.
func TestMoveWithoutTwin(t *testing.T) {
	const k, z, b = 16, 4, 4
	size := 4 * ((k+b)*(k+b) + leanTail)
	m, err := NewMemory(&twinlessGPU{Host: newHost(), size: size}, k, z, MemoryOptions{Batch: b})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if mt := m.MoveTune(); !mt.Decided || mt.Move != MoveScatter || mt.GatherOff == nil || m.Move() != MoveScatter || m.sim2 != 0 {
		t.Fatalf("MoveAuto without its second matrix: %+v, Move %v", mt, m.Move())
	}
	r := rand.New(rand.NewPCG(8, 9))
	mem := unitRows(r, k, z, nil)
	if err := m.Load(mem, nil); err != nil {
		t.Fatal(err)
	}
	policy := memory.NewDUEL(memory.Protected)
	for u := range 4 {
		mem = updateLikeDUEL(t, fmt.Sprintf("update %d", u), m, policy, mem, unitRows(r, b, z, mem))
	}
	if _, err := NewMemory(&twinlessGPU{Host: newHost(), size: size}, k, z, MemoryOptions{Batch: b, Move: MoveGather}); err == nil || !strings.Contains(err.Error(), "second similarity matrix") {
		t.Errorf("MoveGather without its second matrix: %v, want an error naming it", err)
	}
}
