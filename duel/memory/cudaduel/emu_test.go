package cudaduel

import (
	"testing"

	"github.com/duel-ssl/duel/internal/cudatest"
)

// TestDUELEmulated runs duel.cu itself (and sgemm_f32 for the dots) on the
// CPU emulator, through Update's and Memory's marshalling and the
// driver's parameter layout (cudatest.Emulator), and compares with memory.DUEL:
// evictions, kept positions and carried scores bit for bit. One update at
// a time on the streams of TestDUELHost at several block sizes, then
// resident streams (batches of varying size, the capacity growing) with
// the selection in dynamic shared memory and in global memory.
func TestDUELEmulated(t *testing.T) {
	e := cudatest.NewEmulator(t)
	run := func(block int) func(mem, batch []float32, z int, opt Options) (Result, error) {
		return func(mem, batch []float32, z int, opt Options) (Result, error) {
			opt.BlockSize = block
			return Update(e, mem, batch, z, opt)
		}
	}
	small := []duelCase{{1, 1, 1}, {1, 3, 2}, {2, 0, 3}, {3, 5, 4}, {5, 2, 7}, {7, 7, 1}, {16, 4, 8}, {33, 9, 5}, {40, 64, 3}}
	stream(t, "emu32", small, run(32))
	stream(t, "emu96", small, run(96))
	stream(t, "emu256", []duelCase{{64, 16, 17}, {100, 37, 12}}, run(256))
	stream(t, "emu1024", []duelCase{{129, 31, 33}}, run(1024))

	residentStream(t, "resident32", residentCases, openResident(e, 32, false))
	residentStream(t, "resident96-global", residentCases, openResident(e, 96, true))
	residentStream(t, "resident256", []duelCase{{100, 37, 12}}, openResident(e, 256, false))
	residentStream(t, "resident1024-global", []duelCase{{129, 31, 33}}, openResident(e, 1024, true))
	residentStream(t, "resident96-prefetch", residentCases, openPrefetch(openResident(e, 96, false)))
	residentStream(t, "resident256-global-prefetch", []duelCase{{100, 37, 12}}, openPrefetch(openResident(e, 256, true)))
}
