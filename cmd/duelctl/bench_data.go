package main

import (
	"fmt"
	"runtime"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/duel-ssl/duel/duel/data"
	"github.com/duel-ssl/duel/duel/data/augment"
	"github.com/duel-ssl/duel/duel/train"
	"github.com/duel-ssl/duel/internal/proctime"
)

func benchDataCommand() *cli.Command {
	return &cli.Command{
		Name:  "data",
		Usage: "time the data pipeline: class-imbalanced sampling plus two augmented views per image, on the embedded CIFAR-10 subset",
		Description: "Runs the loader (paper recipe by default: RandomResizedCrop to 32, flip p=0.75, colour jitter p=0.5,\n" +
			"grayscale p=0.2, normalise) for --seconds, --repeats times, and reports the median views per second\n" +
			"by the clock (\"views_per_s\"). \"cpu_views_per_s\" is views per CPU-second of the process times the\n" +
			"cores the workers can use (min(--workers, GOMAXPROCS)): what the workers would do on otherwise idle\n" +
			"cores (the machine is often shared).\n" + benchMachineHelpCPU,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "batch", Value: 256, Usage: "images per batch (two views each)"},
			&cli.IntFlag{Name: "workers", Value: 0, DefaultText: "GOMAXPROCS", Usage: "augmentation goroutines, at most 1024"},
			&cli.IntFlag{Name: "size", Value: 32, Usage: "view height and width, at most 1024"},
			&cli.StringFlag{Name: "preset", Value: "paper", Usage: "augmentation recipe: paper, mocov2, simclr or none"},
			&cli.Float64Flag{Name: "seconds", Value: 2, Usage: fmt.Sprintf("duration of one repeat, at most %d", maxBenchSeconds)},
			&cli.IntFlag{Name: "repeats", Value: 3, Usage: fmt.Sprintf("repeats; the median is reported; at most %d", maxBenchRepeats)},
			cpuDeviceFlag,
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			if err := checkCPUOnly(c, "the loader's workers sample and augment on the CPU, in training too, whatever --device train is given"); err != nil {
				return err
			}
			batch, workers, size, reps := c.Int("batch"), c.Int("workers"), c.Int("size"), c.Int("repeats")
			secs := c.Float64("seconds")
			switch {
			case batch <= 0:
				return flagError("batch", batch, "a positive integer")
			case workers < 0 || workers > train.MaxWorkers:
				return flagError("workers", workers, fmt.Sprintf("0 (GOMAXPROCS) or an integer in [1, %d]", train.MaxWorkers))
			case size <= 0 || size > maxViewSize:
				return flagError("size", size, fmt.Sprintf("an integer in [1, %d]", maxViewSize))
			case reps <= 0 || reps > maxBenchRepeats:
				return flagError("repeats", reps, fmt.Sprintf("an integer in [1, %d]", maxBenchRepeats))
			case !(secs > 0) || secs > maxBenchSeconds:
				return flagError("seconds", secs, fmt.Sprintf("a positive number of at most %d", maxBenchSeconds))
			}
			if err := train.CheckMemory(loaderNeed(batch, size)); err != nil {
				return err
			}
			if workers == 0 {
				workers = runtime.GOMAXPROCS(0)
			}
			ds, err := data.Open("default", "", true)
			if err != nil {
				return err
			}
			mean, std, _ := data.NormStats("cifar10")
			pipe, err := augment.Preset(c.String("preset"), size, mean, std)
			if err != nil {
				return flagError("preset", fmt.Sprintf("%q", c.String("preset")), "paper, mocov2, simclr or none")
			}
			sampler, err := data.NewSampler(ds.Labels, ds.NumClasses(), data.SamplerConfig{RhoMax: 0.5, Seed: 1})
			if err != nil {
				return err
			}
			mach := newBenchMachine(nil)
			mach.write(c.App.Writer)
			cores := min(workers, runtime.GOMAXPROCS(0)) // the cores timeLoader's CPU rate counts
			var wall, cpu []float64
			for r := 0; r < reps; r++ {
				w, cp, err := timeLoader(ds, sampler, pipe, batch, workers, secs)
				if err != nil {
					return err
				}
				wall, cpu = append(wall, w), append(cpu, cp)
				fmt.Fprintf(c.App.Writer, "repeat %d: %.0f views/s by the clock; %.0f views per CPU-second x %d cores the workers can use = %.0f views/s on idle cores\n",
					r+1, w, cp/float64(cores), cores, cp)
			}
			mw, mc := median(wall), median(cpu)
			fmt.Fprintf(c.App.Writer, "data pipeline (%s, %dx%d views, batch %d, %d workers): median %.0f views/s by the clock, %.0f views/s on idle cores (by CPU time)\n",
				c.String("preset"), size, size, batch, workers, mw, mc)
			out := map[string]any{"views_per_s": mw, "cpu_views_per_s": mc, "workers": workers,
				"batch": batch, "size": size, "preset": c.String("preset")}
			mach.addTo(out)
			return emitJSON(c, out)
		},
	}
}

// maxViewSize bounds bench data's --size, as bench step's.
const maxViewSize = 1024

// loaderBatches is how many batches a data.Loader holds at once at least:
// two prefetched and one being read.
const loaderBatches = 3

// loaderNeed is the memory of the loader's batches of batch images with
// two RGB float32 views of size x size each.
func loaderNeed(batch, size int) train.MemoryNeed {
	return train.MemoryNeed{Flag: "batch", Got: batch,
		Bytes: loaderBatches * 2 * 4 * 3 * float64(batch) * float64(size) * float64(size),
		What:  fmt.Sprintf("for the loader's %d batches of two views", loaderBatches)}
}

// timeLoader runs a loader for about secs seconds after a warm-up batch and
// returns views per second of wall time and views per CPU-second times the
// number of workers.
func timeLoader(ds *data.Dataset, s *data.Sampler, p *augment.Pipeline, batch, workers int, secs float64) (float64, float64, error) {
	l, err := data.NewLoader(ds, s, p, data.LoaderConfig{BatchSize: batch, Workers: workers, Seed: 1})
	if err != nil {
		return 0, 0, err
	}
	defer l.Close()
	b, err := l.Next()
	if err != nil {
		return 0, 0, err
	}
	l.Release(b)
	start, cpu0 := time.Now(), proctime.CPUOrZero().Seconds()
	views := 0
	for time.Since(start).Seconds() < secs {
		b, err := l.Next()
		if err != nil {
			return 0, 0, err
		}
		views += 2 * b.N
		l.Release(b)
	}
	el, cpu := time.Since(start).Seconds(), proctime.CPUOrZero().Seconds()-cpu0
	if views == 0 {
		return 0, 0, fmt.Errorf("--seconds %g: no batch finished in that time, expected a duration of at least one batch", secs)
	}
	cpuRate := 0.0
	if cpu > 0 {
		// Per CPU-second, times the cores the workers can use at once.
		cpuRate = float64(views) / cpu * float64(min(workers, runtime.GOMAXPROCS(0)))
	}
	return float64(views) / el, cpuRate, nil
}

// maxBenchSeconds bounds the --seconds of bench gemm (per variant) and
// bench data (per repeat), and maxBenchRepeats bench data's --repeats: a
// typo such as --seconds 1e9 would otherwise hold the machine for years.
const (
	maxBenchSeconds = 3600
	maxBenchRepeats = 1000
)
