package cudaduel

import (
	"fmt"
	"os"
	"time"

	"github.com/duel-ssl/duel/cuda/driver"
	kc "github.com/duel-ssl/duel/kernels/cuda"
)

// Move chooses how the rows kept move into the slots freed after an
// update's selection.
type Move int

const (
	// MoveAuto measures MoveScatter and MoveGather on the memory's own
	// updates, as SelectAuto measures the selections, and keeps the
	// faster: from the second update, moveSamples moves of each in turn
	// (at the batch size of the first), timed by events around each on a
	// *cuda.Device (the wall clock on GPUs that finish their work before
	// returning); until then, and when the second matrix cannot be
	// allocated, MoveScatter. Deciding for MoveScatter frees the second
	// matrix. Memory.MoveTune reports the measurement.
	MoveAuto Move = iota
	// MoveScatter copies the kept batch rows' rows and columns of sim
	// into their slots in place (duel_move): B rows and B columns of K
	// scattered ints each, which dirty about 39% of the K x K block's
	// 32-byte sectors at K 4096, B 256 (docs/cuda.md, "DUEL on the
	// device": the phases around the selection).
	MoveScatter
	// MoveGather gathers the next layout's whole K x K block into a second
	// similarity matrix (duel_gather), which the memory then uses: every
	// write a whole row, at the price of reading and writing the block
	// (about 140 MB at K 4096, B 256) and of the second matrix's device
	// memory (4(K+B)^2 bytes more). BenchmarkDUELKernel's gather variants
	// time it.
	MoveGather
)

// String returns the move's name: auto, scatter or gather.
func (v Move) String() string {
	switch v {
	case MoveAuto:
		return "auto"
	case MoveScatter:
		return "scatter"
	case MoveGather:
		return "gather"
	}
	return fmt.Sprintf("Move(%d)", int(v))
}

// EnvMove names the environment variable that chooses the move for
// memories whose options leave MoveAuto: "scatter" (MoveScatter),
// "gather" (MoveGather), or "auto" and unset (MoveAuto).
const EnvMove = "DUEL_CUDADUEL_MOVE"

// envMove returns EnvMove's move.
func envMove() (Move, error) {
	switch v := os.Getenv(EnvMove); v {
	case "", "auto":
		return MoveAuto, nil
	case "scatter":
		return MoveScatter, nil
	case "gather":
		return MoveGather, nil
	default:
		return 0, fmt.Errorf("cudaduel: %s=%q, expected auto, scatter or gather", EnvMove, v)
	}
}

// moveSamples is the number of timed moves of each way that decide
// between them.
const moveSamples = 5

// moveTune is MoveAuto's measurement (Memory.mtune).
type moveTune struct {
	b                 int // the batch size the samples are taken at
	scatter, gather   []time.Duration
	decided           bool
	use               Move  // the decision
	off               error // why MoveGather is not a candidate (the second matrix's allocation failed)
	scatterN, gatherN int   // moves of each way run (tests)
}

// moveTimer times one move for MoveAuto.
type moveTimer struct {
	phaseTimer
	move Move
}

// allocTwin allocates (and zeroes) sim's twin when the memory may gather:
// with MoveGather (an allocation failure is an error) and with MoveAuto
// until it decides (a failure leaves MoveScatter, the reason in the
// measurement).
func (m *Memory) allocTwin() error {
	if m.move == MoveScatter || m.move == MoveAuto && m.mtune != nil && m.mtune.decided && m.mtune.use == MoveScatter {
		return nil
	}
	n := 4 * ((m.k+m.bcap)*m.w + leanTail)
	p, err := m.g.Alloc(n)
	if err == nil {
		if err = m.g.Zero(p, n); err != nil {
			m.g.Free(p)
		}
	}
	if err != nil {
		err = fmt.Errorf("cudaduel: the second similarity matrix of %d bytes (MoveGather): %w", n, err)
		if m.move == MoveGather {
			return err
		}
		t := m.autoMove()
		t.off, t.decided, t.use = err, true, MoveScatter
		return nil
	}
	m.sim2 = p
	return nil
}

// autoMove returns MoveAuto's measurement, starting it.
func (m *Memory) autoMove() *moveTune {
	if m.mtune == nil {
		m.mtune = &moveTune{}
	}
	return m.mtune
}

// moveTurn returns the way this update of b incoming rows moves its rows:
// MoveAuto's turn while it measures, then its decision.
func (m *Memory) moveTurn(b int) Move {
	if m.move != MoveAuto {
		return m.move
	}
	t := m.autoMove()
	switch {
	case t.decided:
		return t.use
	case m.updates < 1: // the first update: modules loaded, caches cold
		return MoveScatter
	case t.b == 0:
		t.b = b
	case b != t.b:
		return MoveScatter
	}
	if len(t.scatter) <= len(t.gather) {
		return MoveScatter
	}
	return MoveGather
}

// queueMove queues the move of the batch rows kept into the slots freed,
// their grid rows, their rows of sim and their columns: duel_move in
// place (MoveScatter), or duel_gather into sim2, which then becomes sim
// (MoveGather). Under MoveAuto's measurement the move is timed.
func (m *Memory) queueMove(k, z, b int, mv Move) error {
	timed := m.move == MoveAuto && !m.autoMove().decided && m.updates >= 1 && b == m.mtune.b
	var mt *moveTimer
	if timed {
		mt = &moveTimer{phaseTimer: startPhase(m.g), move: mv}
	}
	var err error
	if mv == MoveGather {
		// Rows of K ints by blocks of 256 threads taking 4 ints each: at
		// K 4096, 4 x 4096 blocks (a row each, grid-stride beyond 65535
		// rows).
		cfg := kc.Config{Grid: driver.Dim3{X: (max(k, z) + 1023) / 1024, Y: min(k, 65535), Z: 1}, Block: driver.Dim3{X: 256, Y: 1, Z: 1}}
		if err = kc.DuelGather(m.g, cfg, m.sim, m.sim2, int64(m.w), m.grid, int32(z), int32(k), m.slots); err == nil {
			m.sim, m.sim2 = m.sim2, m.sim
		}
	} else {
		move := kc.Config{Grid: driver.Dim3{X: (max(k, z) + 255) / 256, Y: min(b, 65535), Z: 1}, Block: driver.Dim3{X: 256, Y: 1, Z: 1}}
		err = kc.DuelMove(m.g, move, m.sim, int64(m.w), m.grid, int32(z), int32(k), int32(b), m.slots)
	}
	if mt != nil {
		mt.stop(m.g)
		m.dropMoveTimer()
		m.mtimer = mt
	}
	if err == nil && m.move == MoveAuto {
		if mv == MoveGather {
			m.mtune.gatherN++
		} else {
			m.mtune.scatterN++
		}
	}
	return err
}

// recordMove adds the last update's timed move to MoveAuto's samples
// (waiting for the device to finish it), and decides once both ways have
// moveSamples: deciding for MoveScatter frees the second matrix.
func (m *Memory) recordMove() error {
	mt := m.mtimer
	if mt == nil {
		return nil
	}
	m.mtimer = nil
	dt, err := mt.read(m.g)
	if err != nil {
		return err // the move's fault, reported by the next call that waits
	}
	if m.moveClock != nil {
		dt = m.moveClock(mt.move, dt)
	}
	t := m.mtune
	if mt.move == MoveGather {
		t.gather = append(t.gather, dt)
	} else {
		t.scatter = append(t.scatter, dt)
	}
	if len(t.scatter) >= moveSamples && len(t.gather) >= moveSamples {
		t.decided, t.use = true, MoveScatter
		if median(t.gather) < median(t.scatter) {
			t.use = MoveGather
		}
		if t.use == MoveScatter && m.sim2 != 0 {
			m.g.Free(m.sim2)
			m.sim2 = 0
		}
	}
	return nil
}

// dropMoveTimer closes the events of a move timed but not yet recorded.
func (m *Memory) dropMoveTimer() {
	if m.mtimer != nil {
		m.mtimer.close()
		m.mtimer = nil
	}
}

// Move returns how the memory's updates move the rows kept into the
// slots freed: MemoryOptions.Move or EnvMove's choice, MoveAuto's
// decision once taken, MoveAuto while it measures.
func (m *Memory) Move() Move {
	if m.move == MoveAuto && m.mtune != nil && m.mtune.decided {
		return m.mtune.use
	}
	return m.move
}

// MoveTune is what MoveAuto measured on a memory (Memory.MoveTune).
type MoveTune struct {
	// Decided is true once both ways were timed (or gathering was ruled
	// out); Move is then the one every update runs.
	Decided bool
	Move    Move
	// Scatter and Gather are the median times of the two moves at the
	// batch size of the measurement.
	Scatter, Gather time.Duration
	// GatherOff is why MoveGather is not a candidate (nil: it is): its
	// second matrix could not be allocated.
	GatherOff error
}

// MoveTune returns MoveAuto's measurement so far (the zero value for the
// other moves and before the measurement starts).
func (m *Memory) MoveTune() MoveTune {
	t := m.mtune
	if m.move != MoveAuto || t == nil {
		return MoveTune{}
	}
	mt := MoveTune{Decided: t.decided, GatherOff: t.off, Scatter: median(t.scatter), Gather: median(t.gather)}
	if t.decided {
		mt.Move = t.use
	}
	return mt
}
