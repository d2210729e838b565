package train

import (
	"errors"
	"math"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/nn/resnet"
)

// part returns the bytes of the first part of needs named flag (0 when
// there is none).
func part(needs []MemoryNeed, flag string) float64 {
	for _, n := range needs {
		if n.Flag == flag {
			return n.Bytes
		}
	}
	return 0
}

// TestMemoryNeedsParts: what each part of the estimate counts, per memory
// row, per image and per parameter (see MemoryNeedsOn).
func TestMemoryNeedsParts(t *testing.T) {
	const row = 4*256 + 36 // a row of 256 features and its metadata
	sz18w4, _ := resnet.SizeOf("resnet18-w4", false, 32, 32)
	img, act := 4*3*32*32.0, 4*float64(sz18w4.Activations)
	duel := func(k, z, b int) float64 { return memory.NewDUEL(memory.Protected).HostBytes(k, z, b) }
	for _, tc := range []struct {
		name, method, flag string
		edit               func(*Config)
		want               float64
	}{
		// The rows and the logits of 16 queries against them (64 bytes a
		// row); a checkpoint streams them, no copy.
		{"moco rows", "moco", "memory-size", func(c *Config) { c.MemorySize = 1000000 }, 1000000 * (row + 4*16)},
		// The DUEL policy's state on top: beyond 8192 rows, no K x K block.
		{"dmoco rows", "dmoco", "memory-size", func(c *Config) { c.MemorySize = 1000000 }, 1000000*(row+4*16) + duel(1000000, 256, 16)},
		{"dmoco block", "dmoco", "memory-size", func(c *Config) { c.MemorySize = 8192 }, 8192*(row+4*16) + duel(8192, 256, 16)},
		// 1024 queries: their logits (4 KiB a row) are the larger.
		{"moco logits", "moco", "memory-size", func(c *Config) { c.MemorySize, c.Batch = 100000, 1024 }, 100000 * (row + 4*1024)},
		// Negatives the batch only: the rows alone.
		{"moco batch negatives", "moco", "memory-size", func(c *Config) { c.MemorySize, c.Batch, c.Negatives = 100000, 1024, "batch" }, 100000 * row},
		// A draw of 100 negatives of D-SimCLR: each re-embedded (image,
		// activations, projection), and the logits of both views.
		{"dsimclr negatives", "dsimclr", "mem-negatives", func(c *Config) { c.MemorySize, c.MemNegatives = 100000, 100 }, 100 * (4*2*16 + img + act + 4*256)},
		// The views: 2 images each, activations twice with gradient (both
		// views for SimCLR, the query for MoCo), once without (MoCo's keys,
		// BYOL's targets, and the target view re-encoded with memory-from
		// target).
		{"simclr views", "simclr", "batch", nil, 16 * (2*img + 4*act)},
		{"moco views", "moco", "batch", nil, 16 * (2*img + 3*act)},
		{"moco target views", "moco", "batch", func(c *Config) { c.MemoryFrom = "target" }, 16 * (2*img + 4*act)},
		{"byol views", "byol", "batch", nil, 16 * (2*img + 6*act)},
		// The encoder: weights, gradients, SGD's momentum and its
		// checkpoint copy, and MoCo's key encoder; Adam keeps two moments.
		{"moco sgd model", "moco", "arch", func(c *Config) { c.Optimizer = "sgd" }, 4 * (5*float64(sz18w4.Params) + 2*float64(sz18w4.Buffers))},
		{"simclr adam model", "simclr", "arch", func(c *Config) { c.Optimizer = "adam" }, 4 * (6*float64(sz18w4.Params) + float64(sz18w4.Buffers))},
		{"simclr sgd without momentum", "simclr", "arch", func(c *Config) { c.Optimizer, c.Momentum = "sgd", 0 }, 4 * (2*float64(sz18w4.Params) + float64(sz18w4.Buffers))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Preset("tiny", tc.method)
			if err != nil {
				t.Fatal(err)
			}
			c.ProjDim, c.Batch = 256, 16
			if tc.edit != nil {
				tc.edit(&c)
			}
			if err := c.ValidateSettings(); err != nil {
				t.Fatal(err)
			}
			if got := part(c.MemoryNeeds(), tc.flag); math.Abs(got-tc.want) > 1e-9*tc.want {
				t.Errorf("--%s part %.0f bytes, expected %.0f", tc.flag, got, tc.want)
			}
		})
	}
}

// TestMemoryNeedsScaling: the encoder's part grows with the square of its
// width, the memory's with its rows, a model on a GPU leaves only the
// host's copies, and ranks share the views.
func TestMemoryNeedsScaling(t *testing.T) {
	c, err := Preset("cpu-small", "moco")
	if err != nil {
		t.Fatal(err)
	}
	arch := func(a string) float64 { c.Arch = a; return part(c.MemoryNeeds(), "arch") }
	for _, w := range []int{16, 64, 256} {
		small, large := arch("resnet18-w"+strconv.Itoa(w)), arch("resnet18-w"+strconv.Itoa(2*w))
		if r := large / small; r < 3.9 || r > 4 {
			t.Errorf("width %d to %d: the encoder's part grows %.3f times, expected about 4", w, 2*w, r)
		}
	}
	c.Arch = "resnet18-w16"
	rows := func(k int) float64 { c.MemorySize = k; return part(c.MemoryNeeds(), "memory-size") }
	if a, b := rows(100000), rows(200000); math.Abs(b-2*a) > 1e-9*b {
		t.Errorf("memory of 100000 rows %.0f bytes, of 200000 %.0f, expected twice", a, b)
	}
	c.MemorySize = 2048
	cpu, gpu := part(c.MemoryNeeds(), "arch"), part(c.MemoryNeedsOn("cuda:0", 1), "arch")
	if !(gpu > 0 && gpu < cpu) {
		t.Errorf("the encoder's part %.0f bytes on a GPU, %.0f on the CPU", gpu, cpu)
	}
	if part(c.MemoryNeedsOn("cuda:0", 1), "batch") >= part(c.MemoryNeeds(), "batch") {
		t.Error("the activations counted on the host with the model on a GPU")
	}
	if one, two := part(c.MemoryNeedsOn("", 1), "batch"), part(c.MemoryNeedsOn("", 2), "batch"); math.Abs(one-2*two) > 1e-9*one {
		t.Errorf("views %.0f bytes on one rank, %.0f on each of two", one, two)
	}
}

// TestMemoryRefusals: on a machine of 24 GiB, the largest memory (MoCo,
// batch 16, --proj-dim 512: 32 GiB of rows; of 256, 16 GiB fits) and the
// widest encoder (ResNet-18 of width 1024: 2.9 billion parameters, 11 GB
// each copy) are refused, naming their flag; memories of a million rows
// are not.
func TestMemoryRefusals(t *testing.T) {
	const have = 24 << 30
	for _, tc := range []struct {
		name, method, flag, device string
		edit                       func(*Config)
	}{
		{"memory-size", "moco", "memory-size", "", func(c *Config) { c.MemorySize, c.Batch, c.ProjDim = MaxMemorySize, 16, 512 }},
		{"dmoco memory-size", "dmoco", "memory-size", "", func(c *Config) { c.MemorySize, c.Batch = MaxMemorySize, 16 }},
		{"arch", "moco", "arch", "", func(c *Config) { c.Arch, c.Batch = "resnet18-w1024", 16 }},
		{"arch simclr", "simclr", "arch", "", func(c *Config) { c.Arch, c.Batch = "resnet18-w1024", 16 }},
		// A checkpoint copies the networks and the optimizer's state to
		// the host.
		{"arch on a GPU", "moco", "arch", "cuda:0", func(c *Config) { c.Arch, c.Batch = "resnet18-w1024", 16 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Preset(DefaultPreset, tc.method)
			if err != nil {
				t.Fatal(err)
			}
			tc.edit(&c)
			if err := c.ValidateSettings(); err != nil {
				t.Fatal(err)
			}
			err = checkMemoryOn(have, c.MemoryNeedsOn(tc.device, 1))
			var me *MemoryError
			if !errors.As(err, &me) || me.Flag != tc.flag {
				t.Fatalf("error %v, expected --%s's *MemoryError", err, tc.flag)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "--"+tc.flag+": got ") || !strings.HasSuffix(msg, "this machine has 24 GiB") {
				t.Errorf("error %q", msg)
			}
		})
	}
	for _, m := range []string{"moco", "dmoco", "simclr", "dsimclr", "byol", "barlow"} {
		c, _ := Preset(DefaultPreset, m)
		c.MemorySize = 1000000
		if m == "dmoco" || m == "dsimclr" {
			c.MemorySize = 100000 // DUEL's state: a 256 x K panel
		}
		if err := checkMemoryOn(have, c.MemoryNeeds()); err != nil {
			t.Errorf("%s with a memory of %d: %v", m, c.MemorySize, err)
		}
	}
}

// TestLimitHeap: the heap is bounded by 90% of the machine's memory,
// unless GOMEMLIMIT bounds it already.
func TestLimitHeap(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	t.Setenv("GOMEMLIMIT", "")
	if have := MachineMemory(); have > 0 {
		if got := LimitHeap(); got != have/10*9 || debug.SetMemoryLimit(-1) != got {
			t.Errorf("LimitHeap() = %d (runtime limit %d) on a machine of %d bytes", got, debug.SetMemoryLimit(-1), have)
		}
	}
	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetMemoryLimit(math.MaxInt64)
	if got := LimitHeap(); got != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("LimitHeap() = %d with GOMEMLIMIT set", got)
	}
}

// TestCollectSooner: the collector's target is HeapGrowth until restored,
// unless GOGC sets it.
func TestCollectSooner(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "")
	restore := CollectSooner()
	if got := debug.SetGCPercent(HeapGrowth); got != HeapGrowth {
		t.Errorf("the target is %d%% without GOGC, want %d%%", got, HeapGrowth)
	}
	restore()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("the target is %d%% once restored, want 100%%", got)
	}
	t.Setenv("GOGC", "200")
	CollectSooner()()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("CollectSooner changed the target to %d%% with GOGC set", got)
	}
}
