package cudaduel

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"
	"unsafe"

	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/cuda/driver"
	"github.com/duel-ssl/duel/internal/cudatest"
	kc "github.com/duel-ssl/duel/kernels/cuda"
)

// TestMain removes the emulator library's directory after the tests.
func TestMain(m *testing.M) { os.Exit(cudatest.Main(m)) }

// needGPU returns the default device or skips the test, saying why.
func needGPU(t testing.TB) *cuda.Device {
	t.Helper()
	d, err := cuda.Default()
	if err != nil {
		t.Skipf("cuda: no usable GPU on this machine (%v): CUDA kernels verified by compilation only", err)
	}
	return d
}

// newHost returns a cudatest.Host that runs duel.cu's kernels as their Go
// transcriptions (host.go); sgemm_f32 is cudatest's own.
func newHost() *cudatest.Host {
	h := cudatest.NewHost()
	for name, k := range hostKernels {
		h.Register(name, k)
	}
	return h
}

// hostKernels are duel.cu's kernels on a cudatest.Host, with the launch
// parameters of kernels/cuda's generated launchers.
var hostKernels = map[string]cudatest.Kernel{
	"duel_grid": func(h *cudatest.Host, _ kc.Config, a cudatest.Args) error {
		n := a.Int64(1)
		duelGridHost(h.F32(a.Ptr(2))[:n], h.F32(a.Ptr(0))[:n])
		return nil
	},
	"duel_scores": func(h *cudatest.Host, _ kc.Config, a cudatest.Args) error {
		duelScoresHost(h.F64(a.Ptr(3)), h.I32(a.Ptr(0)), int(a.Int64(1)), int(a.Int32(2)))
		return nil
	},
	"duel_int_block": func(h *cudatest.Host, _ kc.Config, a cudatest.Args) error {
		duelIntBlockHost(h.I32(a.Ptr(0)), int(a.Int64(1)), int(a.Int32(2)), int(a.Int32(3)))
		return nil
	},
	"duel_move": func(h *cudatest.Host, _ kc.Config, a cudatest.Args) error {
		k, b := int(a.Int32(4)), int(a.Int32(5))
		duelMoveHost(h.I32(a.Ptr(0)), int(a.Int64(1)), h.F32(a.Ptr(2)), int(a.Int32(3)), k, b, h.I32(a.Ptr(6))[:3*k+b])
		return nil
	},
	"duel_gather": func(h *cudatest.Host, _ kc.Config, a cudatest.Args) error {
		k := int(a.Int32(5))
		duelGatherHost(h.I32(a.Ptr(0)), h.I32(a.Ptr(1)), int(a.Int64(2)), h.F32(a.Ptr(3)), int(a.Int32(4)), k, h.I32(a.Ptr(6))[:3*k])
		return nil
	},
	"duel_dots": func(h *cudatest.Host, cfg kc.Config, a cudatest.Args) error {
		z, k, b := int(a.Int32(1)), int(a.Int32(2)), int(a.Int32(3))
		if cfg.Grid.X*64 < k+b || cfg.Grid.Y*64 < b || cfg.Block.X != 256 {
			return fmt.Errorf("duel_dots launched with grid %v, block %v: expected 64 x 64 tiles over %d slots and %d batch rows, 256 threads", cfg.Grid, cfg.Block, k+b, b)
		}
		duelDotsHost(h.F32(a.Ptr(0)), z, k, b, h.I32(a.Ptr(4)), int(a.Int64(5)), i64(h, a.Ptr(6))[:b])
		return nil
	},
	"duel_select_shared": func(h *cudatest.Host, cfg kc.Config, a cudatest.Args) error {
		if want := selectShared(int(a.Int32(2)), int(a.Int32(3))); cfg.Shared < want {
			return fmt.Errorf("duel_select_shared launched with %d bytes of shared memory, needs %d", cfg.Shared, want)
		}
		return selectOnHost(h, a, 0, 7)
	},
	"duel_select_global": func(h *cudatest.Host, cfg kc.Config, a cudatest.Args) error {
		if cfg.Shared != 0 {
			return fmt.Errorf("duel_select_global launched with %d bytes of shared memory", cfg.Shared)
		}
		if n := len(i64(h, a.Ptr(7))); n < int(a.Int32(2))+int(a.Int32(3)) {
			return fmt.Errorf("duel_select_global's scratch holds %d values, needs K+B", n)
		}
		return selectOnHost(h, a, 0, 8)
	},
	// duel_select_cluster's results are defined as duel_select_shared's
	// (the emulator checks the kernel against it): the same Go code, on
	// its parameters (grid and Z after W, U before the outputs).
	"duel_select_cluster": func(h *cudatest.Host, cfg kc.Config, a cudatest.Args) error {
		k, b, z := int(a.Int32(4)), int(a.Int32(5)), int(a.Int32(3))
		if cfg.Grid.X != clusterSize || cfg.Grid.Y != 1 || cfg.Grid.Z != 1 {
			return fmt.Errorf("duel_select_cluster launched on a grid of %v blocks, expected one cluster of %d", cfg.Grid, clusterSize)
		}
		if want := clusterShared(k, b, z); cfg.Shared < want {
			return fmt.Errorf("duel_select_cluster launched with %d bytes of shared memory, needs %d", cfg.Shared, want)
		}
		if n := len(h.F32(a.Ptr(2))); n < (k+b)*z {
			return fmt.Errorf("duel_select_cluster's grid holds %d values, needs (K+B)*Z = %d", n, (k+b)*z)
		}
		if n := len(i64(h, a.Ptr(9))); n < k+b {
			return fmt.Errorf("duel_select_cluster's scratch holds %d values, needs K+B", n)
		}
		return selectOnHost(h, a, 2, 10)
	},
	// So are duel_select_rounds' (its parameters: flags, then the
	// candidates' cap, before the scores; the statistics last, the rounds
	// taken first).
	"duel_select_rounds": func(h *cudatest.Host, cfg kc.Config, a cudatest.Args) error {
		k, b, capC := int(a.Int32(2)), int(a.Int32(3)), int(a.Int32(5))
		if capC < 1 || capC > 128 {
			return fmt.Errorf("duel_select_rounds launched with cap %d, expected 1..128", capC)
		}
		if want := roundsShared(k, b, capC); cfg.Shared < want {
			return fmt.Errorf("duel_select_rounds launched with %d bytes of shared memory, needs %d", cfg.Shared, want)
		}
		if !packedFits(k, b) {
			return fmt.Errorf("selection launched for K %d, B %d: the keys do not fit", k, b)
		}
		duelSelectHost(h.I32(a.Ptr(0)), int(a.Int64(1)), k, b, a.Int32(4)&selectProtect != 0, h.F64(a.Ptr(6))[:k], i64(h, a.Ptr(7))[:b],
			h.I32(a.Ptr(8))[:b], h.I32(a.Ptr(9))[:3*k+b], h.F64(a.Ptr(10))[:k])
		i64(h, a.Ptr(11))[0] = int64(b) // the transcription takes a step a round
		return nil
	},
	// And duel_select_rounds8's (one cluster; U, global scratch, before
	// the outputs).
	"duel_select_rounds8": func(h *cudatest.Host, cfg kc.Config, a cudatest.Args) error {
		k, b, capQ := int(a.Int32(2)), int(a.Int32(3)), int(a.Int32(5))
		switch {
		case cfg.Grid.X != clusterSize || cfg.Grid.Y != 1 || cfg.Grid.Z != 1:
			return fmt.Errorf("duel_select_rounds8 launched on a grid of %v blocks, expected one cluster of %d", cfg.Grid, clusterSize)
		case cfg.Block.X < rounds8MinBlock || cfg.Block.X%32 != 0:
			return fmt.Errorf("duel_select_rounds8 launched with blocks of %d threads, expected whole warps, at least %d", cfg.Block.X, rounds8MinBlock)
		case capQ < 1 || capQ > 16:
			return fmt.Errorf("duel_select_rounds8 launched with cap %d a block, expected 1..16", capQ)
		case cfg.Shared < rounds8Shared(k, b, capQ):
			return fmt.Errorf("duel_select_rounds8 launched with %d bytes of shared memory, needs %d", cfg.Shared, rounds8Shared(k, b, capQ))
		case len(i64(h, a.Ptr(8))) < k+b:
			return fmt.Errorf("duel_select_rounds8's scratch holds %d values, needs K+B", len(i64(h, a.Ptr(8))))
		case !packedFits(k, b):
			return fmt.Errorf("selection launched for K %d, B %d: the keys do not fit", k, b)
		}
		duelSelectHost(h.I32(a.Ptr(0)), int(a.Int64(1)), k, b, a.Int32(4)&selectProtect != 0, h.F64(a.Ptr(6))[:k], i64(h, a.Ptr(7))[:b],
			h.I32(a.Ptr(9))[:b], h.I32(a.Ptr(10))[:3*k+b], h.F64(a.Ptr(11))[:k])
		i64(h, a.Ptr(12))[0] = int64(b) // the transcription takes a step a round
		return nil
	},
}

// i64 returns the int64 elements from p to the end of its allocation
// (cudatest.Host's F64, reinterpreted).
func i64(h *cudatest.Host, p driver.DevicePtr) []int64 {
	f := h.F64(p)
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*int64)(unsafe.Pointer(unsafe.SliceData(f))), len(f))
}

// selectOnHost runs duelSelectHost on the parameters of a selection
// kernel: sim and W first, then, from parameter 2+skip, K, B, the flags
// (bit 0: protect; the one-block kernels' SELECT_PREFETCH changes no
// result), the scores and the batch sums; its outputs (evicted, kept,
// scoreOut) start at parameter out.
func selectOnHost(h *cudatest.Host, a cudatest.Args, skip, out int) error {
	k, b := int(a.Int32(2+skip)), int(a.Int32(3+skip))
	if !packedFits(k, b) {
		return fmt.Errorf("selection launched for K %d, B %d: the keys do not fit", k, b)
	}
	duelSelectHost(h.I32(a.Ptr(0)), int(a.Int64(1)), k, b, a.Int32(4+skip)&selectProtect != 0, h.F64(a.Ptr(5 + skip))[:k], i64(h, a.Ptr(6+skip))[:b],
		h.I32(a.Ptr(out))[:b], h.I32(a.Ptr(out + 1))[:3*k+b], h.F64(a.Ptr(out + 2))[:k])
	return nil
}

// TestDUELUpdateOnHost checks Update's marshalling (buffer sizes, offsets,
// parameter order, copies) with duel.cu's kernels replaced by their Go
// transcriptions, on one update at a time and on resident streams (the
// selection in shared and in global memory), and that every device buffer
// is freed.
func TestDUELUpdateOnHost(t *testing.T) {
	h := newHost()
	stream(t, "hostgpu", duelCases, func(mem, batch []float32, z int, opt Options) (Result, error) {
		return Update(h, mem, batch, z, opt)
	})
	residentStream(t, "hostgpu-resident32", residentCases, openResident(h, 32, false))
	residentStream(t, "hostgpu-resident64-global", residentCases, openResident(h, 64, true))
	if n := h.Live(); n != 0 {
		t.Errorf("%d device allocations left after the updates, want 0", n)
	}
}

// TestDUELTimingOnHost checks that Update with timing (the benchmarks')
// accounts every phase once per update and keeps no phase boundaries.
func TestDUELTimingOnHost(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	m, err := NewMemory(newHost(), 16, 8, MemoryOptions{Batch: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Load(unitRows(r, 16, 8, nil), nil); err != nil {
		t.Fatal(err)
	}
	m.timing = &duelTiming{}
	for range 3 {
		if _, err := m.Update(unitRows(r, 4, 8, nil)); err != nil {
			t.Fatal(err)
		}
	}
	tm := m.timing
	if len(tm.marks) != 0 {
		t.Errorf("%d phase boundaries left after the updates", len(tm.marks))
	}
	for i, d := range []time.Duration{tm.upload, tm.dots, tm.selection, tm.permute, tm.download} {
		if d <= 0 {
			t.Errorf("phase %d timed %v, want a positive time", i, d)
		}
	}
}
