package cudaduel

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/cuda/driver"
	"github.com/duel-ssl/duel/internal/cudatest"
	kc "github.com/duel-ssl/duel/kernels/cuda"
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

// TestDUELIntBlockEmulated runs duel_int_block (duel.cu on the CPU
// emulator) on blocks of odd and empty shapes inside a wider matrix of
// float32 bits, narrowed grids included, and compares with its Go
// transcription: the block's integer-valued floats (up to 2^24 in
// magnitude, both signs) become their int32, everything outside stays.
func TestDUELIntBlockEmulated(t *testing.T) {
	e := cudatest.NewEmulator(t)
	r := rand.New(rand.NewPCG(9, 9))
	for _, tc := range []struct{ w, rows, cols, grid int }{
		{1, 1, 1, 1}, {7, 3, 5, 1}, {40, 33, 17, 2}, {65, 64, 65, 3}, {130, 9, 129, 1}, {5, 0, 5, 1}, {5, 4, 0, 1},
	} {
		n := (tc.rows+2)*tc.w + 1 // a row and an element before the block, a row after
		in := make([]int32, n)
		for i := range in {
			in[i] = int32(math.Float32bits(float32(r.IntN(1<<25) - 1<<24)))
		}
		want := slices.Clone(in)
		duelIntBlockHost(want[tc.w+1:], tc.w, tc.rows, tc.cols)
		p, err := e.Alloc(4 * n)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.CopyToDevice(p, cuda.Bytes(in)); err != nil {
			t.Fatal(err)
		}
		cfg := kc.Config{Grid: driver.Dim3{X: tc.grid, Y: 1, Z: 1}, Block: driver.Dim3{X: 64, Y: 1, Z: 1}}
		if err := kc.DuelIntBlock(e, cfg, p+driver.DevicePtr(4*(tc.w+1)), int64(tc.w), int32(tc.rows), int32(tc.cols)); err != nil {
			t.Fatal(err)
		}
		got := make([]int32, n)
		if err := e.CopyFromDevice(cuda.Bytes(got), p); err != nil {
			t.Fatal(err)
		}
		e.Free(p)
		if !slices.Equal(got, want) {
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("W %d, %d x %d block: element %d is %d, want %d", tc.w, tc.rows, tc.cols, i, got[i], want[i])
				}
			}
		}
	}
	// The transcription itself: a float's integer value, in place.
	p := []int32{int32(math.Float32bits(-16777216)), int32(math.Float32bits(12345)), int32(math.Float32bits(float32(math.Copysign(0, -1))))}
	duelIntBlockHost(p, 3, 1, 3)
	if !slices.Equal(p, []int32{-16777216, 12345, 0}) {
		t.Errorf("duelIntBlockHost: %v, want [-16777216 12345 0]", p)
	}
}
