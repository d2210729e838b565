package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/duel-ssl/duel/internal/cpu"
	"github.com/duel-ssl/duel/kernels/gemm"
)

// benchCPUResult is the JSON line of bench cpu: internal/cpu's Info plus
// its key and the instruction-set levels, and the fields every other bench
// subcommand names its machine with (benchMachine: "cpu", "cpu_key",
// "logical_cpus", "cpu_isa", "tuning").
type benchCPUResult struct {
	*cpu.Info
	benchMachine
	// Microarch is Info's and benchMachine's "microarch", which would
	// otherwise cancel each other out (encoding/json drops a name two
	// embedded structs give at the same depth).
	Microarch string `json:"microarch"`

	Key     string `json:"key"`      // tuning-file key (cpu.Info.Key)
	BestISA string `json:"best_isa"` // the best level the CPU and OS support by default
	MaxISA  string `json:"max_isa"`  // the highest level DUEL_ISA may ask for (amx with AMX tiles)
	ISA     string `json:"isa"`      // the level the kernels run at (DUEL_ISA applied)
	DuelISA string `json:"duel_isa"` // the value of DUEL_ISA ("" when unset)
	// BF16 is what --precision bf16 multiplies on (gemm.ISABF16):
	// "amx-bf16", "avx512bf16", or "emulated on" the SGEMM kernel's ISA.
	BF16 string `json:"bf16"`
}

// benchCPUCommand prints what internal/cpu detected: the processor, its
// caches, its vector features and the level the kernels run at.
func benchCPUCommand() *cli.Command {
	return &cli.Command{
		Name:  "cpu",
		Usage: "print the CPU as duel detects it: model, caches, vector features, the ISA level the kernels use",
		Description: "Reads CPUID once (package internal/cpu). \"isa\" is the level the kernels run at:\n" +
			"\"best_isa\" lowered by the environment variable DUEL_ISA (avx512, avx2 or generic), or amx\n" +
			"where DUEL_ISA=amx asks for the AMX tiles and the CPU has them (\"max_isa\": the bf16 products on them).\n" +
			"Feature fields are usable ones (reported by the CPU and enabled by the OS);\n" +
			"\"reported\" holds them as the CPU reports them. 0 and \"\" mean unknown.\n" +
			"The JSON also carries the fields the other bench subcommands name their machine with:\n" +
			"\"cpu\" (the brand again), \"cpu_key\" (= \"key\"), \"logical_cpus\", \"cpu_isa\" (= \"isa\")\n" +
			"and \"tuning\" (the SGEMM configuration in use).",
		Flags: []cli.Flag{jsonFlag},
		Action: func(c *cli.Context) error {
			d := cpu.Detect()
			res := benchCPUResult{Info: d, benchMachine: newBenchMachine(nil), Microarch: d.Microarch, Key: d.Key(), BestISA: d.Best().String(), MaxISA: d.Max().String(), ISA: cpu.ISA().String(), DuelISA: os.Getenv(cpu.EnvISA), BF16: gemm.ISABF16()}
			w := c.App.Writer
			arch := d.Microarch
			if arch == "" {
				arch = "microarchitecture not recognised"
			}
			fmt.Fprintf(w, "cpu:      %s (%s family %d model %d stepping %d, %s)\n", orUnknown(d.Brand), orUnknown(d.Vendor), d.Family, d.Model, d.Stepping, arch)
			fmt.Fprintf(w, "key:      %s\n", res.Key)
			fmt.Fprintf(w, "cpus:     %d logical (GOMAXPROCS %d)\n", res.LogicalCPUs, runtime.GOMAXPROCS(0))
			fmt.Fprintf(w, "caches:   L1d %s, L2 %s per core; L3 %s\n", kib(d.L1D), kib(d.L2), kib(d.L3))
			fmt.Fprintf(w, "fma512:   %s\n", fmaUnits(d.FMA512Units))
			fmt.Fprintf(w, "features: %s\n", featureList(d.Features))
			if off := featureList(disabled(d.Reported, d.Features)); off != "none" {
				fmt.Fprintf(w, "          reported by the CPU but not enabled by the OS: %s\n", off)
			}
			fmt.Fprintf(w, "os state: ymm %v, zmm %v, amx %v\n", d.OSYMM, d.OSZMM, d.OSAMX)
			env := "unset"
			if res.DuelISA != "" {
				env = fmt.Sprintf("%q", res.DuelISA)
			}
			fmt.Fprintf(w, "isa:      %s (best %s, %s %s)\n", res.ISA, res.BestISA, cpu.EnvISA, env)
			fmt.Fprintf(w, "bf16:     %s (--precision bf16 on the CPU)\n", res.BF16)
			fmt.Fprintf(w, "sgemm:    %s\n", describeTuning(res.Tuning))
			if res.MaxISA == cpu.AMX.String() && res.ISA != res.MaxISA {
				fmt.Fprintf(w, "          this CPU has AMX tiles: %s=amx runs the bf16 products on them (opt-in, see the README)\n", cpu.EnvISA)
			}
			return emitJSON(c, res)
		},
	}
}

// orUnknown returns s, or "unknown" when it is empty.
func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// kib formats a cache size in bytes as KiB or MiB ("unknown" for 0).
func kib(n int) string {
	switch {
	case n == 0:
		return "unknown"
	case n >= 4<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

// fmaUnits describes the number of 512-bit FMA units per core.
func fmaUnits(n int) string {
	if n == 0 {
		return "512-bit FMA units per core unknown"
	}
	return fmt.Sprintf("%d 512-bit FMA unit(s) per core (inferred from the model)", n)
}

// featureList names the features set in f, or "none".
func featureList(f cpu.Features) string {
	var names []string
	for _, x := range []struct {
		name string
		on   bool
	}{
		{"avx2", f.AVX2}, {"fma", f.FMA}, {"avx512f", f.AVX512F}, {"avx512dq", f.AVX512DQ},
		{"avx512bw", f.AVX512BW}, {"avx512vl", f.AVX512VL}, {"avx512vnni", f.AVX512VNNI},
		{"avx512bf16", f.AVX512BF16}, {"avxvnni", f.AVXVNNI}, {"amx-tile", f.AMXTile},
		{"amx-bf16", f.AMXBF16}, {"amx-int8", f.AMXInt8},
	} {
		if x.on {
			names = append(names, x.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, " ")
}

// disabled returns the features of reported missing from usable.
func disabled(reported, usable cpu.Features) cpu.Features {
	return cpu.Features{
		AVX2: reported.AVX2 && !usable.AVX2, FMA: reported.FMA && !usable.FMA,
		AVX512F: reported.AVX512F && !usable.AVX512F, AVX512DQ: reported.AVX512DQ && !usable.AVX512DQ,
		AVX512BW: reported.AVX512BW && !usable.AVX512BW, AVX512VL: reported.AVX512VL && !usable.AVX512VL,
		AVX512VNNI: reported.AVX512VNNI && !usable.AVX512VNNI, AVX512BF16: reported.AVX512BF16 && !usable.AVX512BF16,
		AVXVNNI: reported.AVXVNNI && !usable.AVXVNNI, AMXTile: reported.AMXTile && !usable.AMXTile,
		AMXBF16: reported.AMXBF16 && !usable.AMXBF16, AMXInt8: reported.AMXInt8 && !usable.AMXInt8,
	}
}
