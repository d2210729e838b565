package main

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"time"

	"github.com/urfave/cli/v2"
	"gonum.org/v1/gonum/stat"

	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/duel/memory/cudaduel"
	"github.com/duel-ssl/duel/duel/train"
	"github.com/duel-ssl/duel/kernels/gemm"
	"github.com/duel-ssl/duel/kernels/igemm"
)

// benchDuelCommand times one DUEL memory update, fast path against the
// reference, in one process.
func benchDuelCommand() *cli.Command {
	return &cli.Command{
		Name:  "duel",
		Usage: "time one DUEL memory update: the fast path against the paper's pseudocode transcribed, in the same process",
		Description: "Fills a memory of --size random unit rows of --dim values, then offers --updates fresh random\n" +
			"batches of --batch rows to the fast DUEL policy and --reference-updates to the line-by-line\n" +
			"transcription of the paper's Appendix D (full (K+B) x (K+B) score matrix per update). Both make\n" +
			"the same evictions; the speed-up is the ratio of their median update times. For the comparison\n" +
			"with the pseudocode in PyTorch, see bench/duel_pytorch.py.\n\n" +
			"With --device cuda it also times, in the same process, the update on the GPU with the memory\n" +
			"resident there (cudaduel.Policy in the same memory, and cudaduel.Memory's update alone), and\n" +
			"checks that its evictions equal the fast path's; without a usable GPU it refuses. The GPU's\n" +
			"sequential steps run in one block (cuda_kernel names the kernel): the memory's first updates\n" +
			"measure duel_lean.cu's kernel (every thread's keys in registers, compute capability 8.0 on)\n" +
			"against duel.cu's, after checking that their results agree bit for bit, the lean kernel with\n" +
			"and without asking L2 for the next likely victims' rows, and the fastest runs the rest\n" +
			"(cuda_auto_lean_ms, cuda_auto_lean_prefetch_ms, cuda_auto_block_ms: their median selections;\n" +
			"cuda_auto_prefetch: the lean kernel chosen with the prefetch).\n" +
			"DUEL_CUDADUEL_SELECT=block or lean forces one; =cluster runs the steps on a thread-block\n" +
			"cluster instead (compute capability 9.0: slower on an H100), =rounds in certified rounds\n" +
			"(compute capability 8.0: 7-19x slower on an H200), =rounds8 in certified rounds on a cluster\n" +
			"of 8 blocks (9.0: as slow). The rows kept move into the slots freed by scattering their\n" +
			"columns (duel_move) or by gathering the whole K x K block into a second matrix (duel_gather):\n" +
			"the first updates time both and the faster moves the rest (cuda_move names it,\n" +
			"cuda_auto_scatter_ms and cuda_auto_gather_ms their medians); DUEL_CUDADUEL_MOVE=scatter\n" +
			"or gather forces one.\n\n" +
			"Times print in ns, µs, ms or s (3 significant digits); the JSON's are in ms (the \"_ms\"\n" +
			"fields), \"speedup\" is reference_ms / fast_ms and \"cuda_speedup\" fast_ms / cuda_ms.\n" +
			benchMachineHelp,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "size", Value: 2048, Usage: "memory size K"},
			&cli.IntFlag{Name: "batch", Value: 256, Usage: "rows per update B"},
			&cli.IntFlag{Name: "dim", Value: 256, Usage: "row length Z"},
			&cli.IntFlag{Name: "updates", Value: 50, Usage: "timed updates of the fast path, at most 1000000"},
			&cli.IntFlag{Name: "reference-updates", Value: 3, Usage: "timed updates of the reference (0: skip it)"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed of the random rows"},
			&cli.StringFlag{Name: "device", Value: "cpu", Usage: "cpu, or cuda to time the GPU's update beside the CPU's"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			k, b, z := c.Int("size"), c.Int("batch"), c.Int("dim")
			n, nr := c.Int("updates"), c.Int("reference-updates")
			switch {
			case k <= 0:
				return flagError("size", k, "a positive integer")
			case b <= 0:
				return flagError("batch", b, "a positive integer")
			case z <= 0 || z > 1<<16:
				return flagError("dim", z, "an integer in 1..65536")
			case n <= 0 || n > maxBenchSteps:
				return flagError("updates", n, fmt.Sprintf("an integer in [1, %d]", maxBenchSteps))
			case nr < 0:
				return flagError("reference-updates", nr, "0 or a positive integer")
			}
			if err := train.CheckMemory(duelNeeds(k, b, z, n, nr)...); err != nil {
				return err
			}
			var dev *cuda.Device
			switch d := c.String("device"); d {
			case "cpu":
			case "cuda":
				if err := cuda.Available(); err != nil {
					return fmt.Errorf("--device cuda: %w", err)
				}
				var err error
				if dev, err = cuda.Default(); err != nil {
					return fmt.Errorf("--device cuda: %w", err)
				}
				dev.LogSlowLoads(c.App.ErrWriter) // the driver's JIT of the DUEL kernels on a machine's first use
			default:
				return flagError("device", fmt.Sprintf("%q", d), "cpu or cuda")
			}
			rng := rand.New(rand.NewPCG(c.Uint64("seed"), 7))
			gauss := func(rows int) []float32 {
				v := make([]float32, rows*z)
				for i := range v {
					v[i] = float32(rng.NormFloat64())
				}
				return v
			}
			init := gauss(k)
			batches := make([][]float32, n+1)
			for i := range batches {
				batches[i] = gauss(b)
			}
			mach := newBenchMachine(dev)
			mach.write(c.App.Writer)
			fast, fastEv, err := timeDUEL(memory.NewDUEL(memory.Protected), init, batches, k, z)
			if err != nil {
				return err
			}
			res := map[string]any{"size": k, "batch": b, "dim": z, "updates": n,
				"fast_ms": median(fast), "fast_mean_ms": stat.Mean(fast, nil),
				"isa": gemm.ISA(), "int16_kernel": igemm.Kernel()}
			mach.addTo(res)
			fmt.Fprintf(c.App.Writer, "DUEL update (K=%d, B=%d, Z=%d, %s, int16 %s): fast path median %s, mean %s over %d updates\n",
				k, b, z, gemm.ISA(), igemm.Kernel(), fmtMS(median(fast)), fmtMS(stat.Mean(fast, nil)), n)
			if nr > 0 {
				ref, _, err := timeDUEL(memory.NewDUELReference(memory.Protected), init, batches[:min(nr, n)+1], k, z)
				if err != nil {
					return err
				}
				res["reference_ms"], res["speedup"] = median(ref), median(ref)/median(fast)
				fmt.Fprintf(c.App.Writer, "reference (the paper's pseudocode in Go): median %s over %d updates; fast path speed-up %s (reference median / fast median)\n",
					fmtMS(median(ref)), len(ref), fmtRatio(median(ref)/median(fast)))
			}
			if dev != nil {
				if err := benchDuelCUDA(c, dev, res, init, batches, fastEv, k, z); err != nil {
					return err
				}
			}
			return emitJSON(c, res)
		},
	}
}

// duelNeeds estimates, from below, the host memory bench duel holds for a
// memory of k rows of z values, batches of b rows, n timed updates and nr
// of the reference: the initial rows (drawn once, kept for every run),
// the memory's rows with their metadata, the n+1 batches drawn up front,
// and the policy's state at an update (memory.DUEL.HostBytes): the fast
// path's (its part that grows with b under --batch), then the
// reference's (K+B) x (K+B) score matrix for what it holds beyond the
// fast path's, which is gone when the reference runs.
func duelNeeds(k, b, z, n, nr int) []train.MemoryNeed {
	kf, bf, zf := float64(k), float64(b), float64(z)
	fast := memory.NewDUEL(memory.Protected)
	held := fast.HostBytes(k, z, 0)
	update := max(fast.HostBytes(k, z, b)-held, 0)
	needs := []train.MemoryNeed{
		{Flag: "size", Got: k, Bytes: 4*kf*zf + kf*(4*zf+36) + held, What: "for the initial rows, the memory's rows and the DUEL policy's state"},
		{Flag: "updates", Got: n, Bytes: 4 * float64(n+1) * bf * zf, What: "for the batches of the updates, drawn up front"},
		{Flag: "batch", Got: b, Bytes: update, What: "for an update's B x (K+B) dots and the batch's grid rows"},
	}
	if nr > 0 {
		ref := train.MemoryNeed{Flag: "size", Got: k, Bytes: max(memory.NewDUELReference(memory.Protected).HostBytes(k, z, b)-held-update, 0),
			What: "for the reference's (K+B) x (K+B) score matrix (--reference-updates 0 skips it)"}
		if b > k {
			ref.Flag, ref.Got = "batch", b
		}
		needs = append(needs, ref)
	}
	return needs
}

// benchDuelCUDA times the update on the GPU: cudaduel.Policy driving the
// same memory as the CPU run (host rows moved by memory.Memory, the
// policy's memory resident on the device), whose evictions must equal the
// CPU's (fastEv), then cudaduel.Memory's update alone on the same batches.
// It adds its figures to res.
func benchDuelCUDA(c *cli.Context, dev *cuda.Device, res map[string]any, init []float32, batches [][]float32, fastHeld []uint64, k, z int) error {
	p := cudaduel.NewPolicy(dev, memory.Protected)
	defer p.Close()
	gpu, gpuHeld, err := timeDUEL(p, init, batches, k, z)
	if err != nil {
		return err
	}
	for i := range gpuHeld {
		if gpuHeld[i] != fastHeld[i] {
			return fmt.Errorf("bench duel: update %d: the memory holds other rows with the GPU's policy than with the CPU's fast path (hash %x, expected %x)", i, gpuHeld[i], fastHeld[i])
		}
	}
	// cudaduel.Memory alone, on the memory the policy starts from (the rows
	// as memory.Memory normalised them: the policy's first arrival).
	mem, err := memory.New(k, z, memory.NewFIFO())
	if err != nil {
		return fmt.Errorf("bench duel: %w", err)
	}
	if _, err := mem.Add(init, nil, nil, 0); err != nil {
		return fmt.Errorf("bench duel: %w", err)
	}
	dm, err := cudaduel.NewMemory(dev, k, z, cudaduel.MemoryOptions{Admission: memory.Protected, Batch: len(batches[0]) / z})
	if err != nil {
		return fmt.Errorf("bench duel: %w", err)
	}
	defer dm.Close()
	if err := dm.Load(mem.Rows(), nil); err != nil {
		return fmt.Errorf("bench duel: %w", err)
	}
	var upd, updDev []float64
	for i, batch := range batches {
		unit := normalized(batch, z)
		start := time.Now()
		ev0, err := dev.Record()
		if err != nil {
			return fmt.Errorf("bench duel: %w", err)
		}
		_, err = dm.Update(unit)
		if err != nil {
			ev0.Close()
			return fmt.Errorf("bench duel: %w", err)
		}
		wall := time.Since(start)
		ev1, err := dev.Record()
		if err != nil {
			ev0.Close()
			return fmt.Errorf("bench duel: %w", err)
		}
		el, err := dev.Elapsed(ev0, ev1)
		ev0.Close()
		ev1.Close()
		if err != nil {
			return fmt.Errorf("bench duel: %w", err)
		}
		if i > 0 {
			upd = append(upd, wall.Seconds()*1e3)
			updDev = append(updDev, el.Seconds()*1e3)
		}
	}
	fast := res["fast_ms"].(float64)
	res["device"] = dev.String()
	res["cuda_ms"], res["cuda_mean_ms"], res["cuda_update_ms"] = median(gpu), stat.Mean(gpu, nil), median(upd)
	res["cuda_update_device_ms"] = median(updDev)
	res["cuda_speedup"] = fast / median(gpu)
	res["cuda_kernel"], res["cuda_move"] = dm.SelectionKernel(), dm.Move().String()
	fmt.Fprintf(c.App.Writer, "%v: median %s per update through memory.Memory (speed-up %s over the CPU's fast path, same evictions), %s for the resident update alone (%s on the device's stream, between events; steps: %s, move: %v)\n",
		dev, fmtMS(median(gpu)), fmtRatio(fast/median(gpu)), fmtMS(median(upd)), fmtMS(median(updDev)), dm.SelectionKernel(), dm.Move())
	if mt := dm.MoveTune(); mt.Scatter > 0 || mt.Gather > 0 {
		res["cuda_auto_scatter_ms"], res["cuda_auto_gather_ms"] = mt.Scatter.Seconds()*1e3, mt.Gather.Seconds()*1e3
		fmt.Fprintf(c.App.Writer, "the move, measured on the first updates: %v (median: scatter %s, gather %s)\n",
			dm.Move(), fmtMS(mt.Scatter.Seconds()*1e3), fmtMS(mt.Gather.Seconds()*1e3))
	}
	switch a := dm.AutoTune(); {
	case a.Decided:
		res["cuda_auto_lean_ms"], res["cuda_auto_block_ms"], res["cuda_auto_prefetch"] = a.Lean.Seconds()*1e3, a.Block.Seconds()*1e3, a.Prefetch
		pf := ""
		if a.LeanPrefetch > 0 {
			res["cuda_auto_lean_prefetch_ms"] = a.LeanPrefetch.Seconds() * 1e3
			pf = fmt.Sprintf(", with the runners-up prefetched %s", fmtMS(a.LeanPrefetch.Seconds()*1e3))
		}
		kernel := a.Kernel
		if a.Prefetch {
			kernel += " with the prefetch"
		}
		fmt.Fprintf(c.App.Writer, "the steps' kernel, measured on the first updates: %s (median selection: duel_lean.cu's %s%s, duel.cu's %s)\n",
			kernel, fmtMS(a.Lean.Seconds()*1e3), pf, fmtMS(a.Block.Seconds()*1e3))
	case a.LeanOff != nil:
		fmt.Fprintf(c.App.Writer, "the steps' kernel: duel.cu's (%v)\n", a.LeanOff)
	}
	return nil
}

// timeDUEL fills a memory managed by p with the rows init, offers it
// batches[0] untimed (the policy's carried state is built then), and
// returns the wall time of each later batch's update, in ms, and a hash
// of the rows held after each update (two policies that make the same
// evictions give the same hashes).
func timeDUEL(p memory.Policy, init []float32, batches [][]float32, k, z int) ([]float64, []uint64, error) {
	m, err := memory.New(k, z, p)
	if err != nil {
		return nil, nil, fmt.Errorf("bench duel: %w", err)
	}
	if _, err := m.Add(init, nil, nil, 0); err != nil {
		return nil, nil, fmt.Errorf("bench duel: %w", err)
	}
	var ms []float64
	var held []uint64
	for i, batch := range batches {
		start := time.Now()
		if _, err := m.Add(batch, nil, nil, i+1); err != nil {
			return nil, nil, fmt.Errorf("bench duel: %w", err)
		}
		if i > 0 {
			ms = append(ms, time.Since(start).Seconds()*1e3)
		}
		h := fnv.New64a()
		for _, v := range m.Rows() {
			var b [4]byte
			binary.LittleEndian.PutUint32(b[:], math.Float32bits(v))
			h.Write(b[:])
		}
		held = append(held, h.Sum64())
	}
	return ms, held, nil
}

// normalized returns the rows of v (z values each) divided by their L2
// norms (zero rows stay zero).
func normalized(v []float32, z int) []float32 {
	out := make([]float32, len(v))
	for r := 0; r+z <= len(v); r += z {
		var ss float64
		for _, x := range v[r : r+z] {
			ss += float64(x) * float64(x)
		}
		if ss == 0 {
			continue
		}
		inv := 1 / math.Sqrt(ss)
		for i, x := range v[r : r+z] {
			out[r+i] = float32(float64(x) * inv)
		}
	}
	return out
}
