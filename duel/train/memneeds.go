package train

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/duel-ssl/duel/duel/data"
	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/duel/ssl"
	"github.com/duel-ssl/duel/nn/resnet"
)

// CheckMemory refuses a configuration whose run cannot fit this machine's
// memory, naming the flag that asks for the most (*MemoryError; nil when
// the memory is unknown). The estimate (MemoryNeeds) is a lower bound.
func (c *Config) CheckMemory() error {
	return CheckMemory(c.MemoryNeeds()...)
}

// MemoryNeeds estimates, from below, the memory a training step of c holds
// (on one process; settings checked by ValidateSettings): the two views of
// a batch and their first activations, the projection heads with their
// gradients (and Barlow Twins' cross-correlation matrix) and the memory's
// rows with its DUEL policy's blocks. The other activations, the target
// networks and the optimizer's state come on top.
func (c *Config) MemoryNeeds() []MemoryNeed {
	side := datasetSide(c.Dataset)
	needs := []MemoryNeed{{"batch", c.Batch, 2 * ForwardBytes(c.Arch, c.Stem, c.Batch, side, side, 1),
		"for the two views of a batch and their first activations"}}
	fd, _ := resnet.FeatureDimOf(c.Arch) // 0 for an unknown arch, which Validate names
	feat := float64(fd)
	info, known := ssl.Lookup(c.Method)
	dim, hidden := float64(c.ProjDim), float64(c.ProjHidden)
	if hidden == 0 && (info.Predictor || c.Method == "barlow") {
		hidden = dim // their projectors keep a hidden layer of --proj-dim
	}
	// Weights and gradients of the projector, and its outputs for the batch.
	params := feat * dim
	if hidden > 0 {
		params = feat*hidden + hidden*dim
	}
	head := 4 * (2*params + 2*float64(c.Batch)*(hidden+dim))
	headFlag, headGot := "proj-dim", c.ProjDim
	if c.ProjHidden > c.ProjDim {
		headFlag, headGot = "proj-hidden", c.ProjHidden
	}
	needs = append(needs, MemoryNeed{headFlag, headGot, head, "for the projection head"})
	if c.Method == "barlow" {
		needs = append(needs, MemoryNeed{"proj-dim", c.ProjDim, 4 * dim * dim, "for Barlow Twins' cross-correlation matrix"})
	}
	if info.Predictor {
		pred := float64(c.PredHidden)
		if pred == 0 {
			pred = max(hidden, dim)
		}
		flag, got := "pred-hidden", c.PredHidden
		if c.PredHidden == 0 {
			flag, got = headFlag, headGot
		}
		needs = append(needs, MemoryNeed{flag, got, 4 * 2 * 2 * dim * pred, "for " + c.Method + "'s predictor"})
	}
	if known && info.Memory {
		k := float64(c.MemorySize)
		mem := k * (4*dim + 20) // rows, ids, labels and steps
		if c.Policy == "duel" {
			mem += memory.NewDUEL(memory.Protected).StateBytes(c.MemorySize)
		}
		needs = append(needs, MemoryNeed{"memory-size", c.MemorySize, mem, "for the memory"})
		if c.MemRefresh > 0 {
			n := float64(min(c.MemRefresh, c.MemorySize))
			needs = append(needs, MemoryNeed{"mem-refresh", c.MemRefresh, 4 * 3 * n * float64(side*side), "for the memory samples re-embedded per step"})
		}
	}
	return needs
}

// datasetSide is the side of a dataset's images (0 for an image folder,
// whose size is only known once it is read).
func datasetSide(name string) int {
	side, _ := data.ImageSide(name)
	return side
}

// ForwardBytes returns a lower bound of the memory n RGB images of h x w
// pixels take going into the ResNet arch with stem ("imagenet", or the
// CIFAR stem): the float32 images and saved copies of the stem
// convolution's output (1 for a forward pass; a training step's tape
// keeps more, and every later layer adds its own). An unknown arch
// counts the images alone.
func ForwardBytes(arch, stem string, n, h, w, saved int) float64 {
	px := 3 * float64(h) * float64(w)
	if _, width, err := resnet.ParseName(arch); err == nil {
		oh, ow := float64(h), float64(w)
		if stem == "imagenet" { // 7x7 stride 2
			oh, ow = float64((h+1)/2), float64((w+1)/2)
		}
		px += float64(saved) * float64(width) * oh * ow
	}
	return 4 * float64(n) * px
}

// MemoryNeed is one part of an estimate of the memory a command's settings
// imply: the flag whose value drives it, that value, the bytes and what
// they hold ("for the views of a batch").
type MemoryNeed struct {
	Flag  string
	Got   any
	Bytes float64
	What  string
}

// MemoryError is a setting that asks for more memory than the machine has:
// "--batch: got 100000000, needs about 2.2 TiB for the two views of a
// batch, this machine has 24 GiB".
type MemoryError struct {
	Flag string
	Got  any
	Need float64 // bytes of every part together
	Part float64 // bytes of the flag's part, the largest
	What string  // what that part holds
	Have int64   // the machine's memory in bytes
}

// Error formats the error as "--flag: got X, needs about N for WHAT, this
// machine has M".
func (e *MemoryError) Error() string {
	need := FormatBytes(e.Need) + " " + e.What
	if e.Part < e.Need*0.95 {
		need = fmt.Sprintf("%s (%s %s)", FormatBytes(e.Need), FormatBytes(e.Part), e.What)
	}
	return fmt.Sprintf("--%s: got %v, needs about %s, this machine has %s", e.Flag, e.Got, need, FormatBytes(float64(e.Have)))
}

// CheckMemory adds up needs and, when they exceed this machine's memory
// (MachineMemory), returns a *MemoryError naming the flag of the largest
// part. It returns nil when the machine's memory is unknown.
func CheckMemory(needs ...MemoryNeed) error {
	return checkMemoryOn(MachineMemory(), needs)
}

func checkMemoryOn(have int64, needs []MemoryNeed) error {
	if have <= 0 || len(needs) == 0 {
		return nil
	}
	total, top := 0.0, 0
	for i, n := range needs {
		total += n.Bytes
		if n.Bytes > needs[top].Bytes {
			top = i
		}
	}
	if !(total > float64(have)) {
		return nil
	}
	t := needs[top]
	return &MemoryError{Flag: t.Flag, Got: t.Got, Need: total, Part: t.Bytes, What: t.What, Have: have}
}

// MachineMemory returns the machine's memory in bytes (MemTotal of
// /proc/meminfo), or 0 where it cannot be read.
func MachineMemory() int64 { return machineMemory() }

var machineMemory = sync.OnceValue(func() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	return parseMemTotal(string(b))
})

// parseMemTotal returns the MemTotal line of a /proc/meminfo in bytes (0
// when absent or malformed).
func parseMemTotal(meminfo string) int64 {
	for _, line := range strings.Split(meminfo, "\n") {
		rest, ok := strings.CutPrefix(line, "MemTotal:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb <= 0 || kb > math.MaxInt64/1024 {
			return 0
		}
		if len(f) > 1 && f[1] != "kB" {
			return 0
		}
		return kb * 1024
	}
	return 0
}

// FormatBytes writes a byte count in binary units: "512 B", "3.5 MiB",
// "24 GiB", "2.2 TiB".
func FormatBytes(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"}
	i := 0
	for b >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	if i == 0 || b >= 10 {
		return fmt.Sprintf("%.0f %s", b, units[i])
	}
	return fmt.Sprintf("%.1f %s", b, units[i])
}
