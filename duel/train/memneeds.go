package train

import (
	"fmt"
	"math"
	"os"
	"runtime/debug"
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
// the memory is unknown). The estimate (MemoryNeeds) is a lower bound of
// what the run holds on the CPU.
func (c *Config) CheckMemory() error {
	return CheckMemory(c.MemoryNeeds()...)
}

// MemoryNeeds is MemoryNeedsOn for one process with its model on the CPU:
// everything a step holds is in the machine's memory.
func (c *Config) MemoryNeeds() []MemoryNeed { return c.MemoryNeedsOn("", 1) }

// MemoryNeedsOn estimates, from below, the host memory one of ranks
// processes of a run of c holds at its peak, settings checked by
// ValidateSettings, with its model on device: "" or "cpu" (or a device
// computing in host memory), else a device name such as "cuda:0", whose
// networks, activations and logits are then on the device and not counted.
// Each part is named by the flag that drives it:
//
//   - --batch: the two views of the rank's share of the batch (float32
//     images) and the activations the step's arena keeps for them until the
//     next step: per image, the encoder's convolution outputs
//     (resnet.SizeOf) twice for a view encoded with gradient (the
//     BatchNorms' inputs and the ReLU outputs the next layers read), once
//     for one encoded without (MoCo's keys, BYOL's targets, the target view
//     re-encoded for the memory). Measured: 2.4 times for ResNet-50.
//   - --arch: the encoder's parameters (resnet.SizeOf, computed from the
//     shapes: no network is built), each held as the weight, its gradient,
//     the optimizer's state (one momentum buffer for sgd and lars with
//     momentum, two moments for adam and adamw) and that state's copy
//     that a checkpoint takes, and, for the methods with a momentum encoder
//     (moco, dmoco, byol), the target's copy; its BatchNorm buffers (and
//     the copy's). On a device: the host copies a checkpoint takes.
//   - --proj-dim or --proj-hidden (the wider): the projection head likewise,
//     and its outputs and their gradients for the batch; --pred-hidden:
//     BYOL's predictor; --proj-dim: Barlow Twins' cross-correlation matrix.
//   - --memory-size: per memory row, its features (4 x --proj-dim bytes) and
//     metadata (36 bytes) (a checkpoint streams them to its file and a
//     resume from it, no second copy), and what a step adds to them: a
//     step whose negatives are every row keeps the logits of the batch's
//     anchors against each (4 bytes per anchor: the global batch's queries
//     for InfoNCE, both views for NT-Xent) and, for D-SimCLR, its image
//     re-embedded with its activations and projection; and the DUEL
//     policy's state
//     (memory.DUEL.HostBytes: the slots' grid rows, 4 x --proj-dim bytes a
//     row, the carried K x K block of dots while it fits 256 MiB (K up to
//     8192) with its ring, else the 256 x K panel its rebuilds use, and
//     the batch's dots).
//   - --mem-negatives: the same per negative for a draw of fewer rows than
//     the memory holds (plus the copy of each row drawn).
//   - --mem-refresh: the images of the rows re-embedded per step, their
//     activations and projections.
//
// It leaves out what does not grow with these settings (the code, the
// runtime, the dataset, the data loader's queue) and the kernels' scratch.
// Go's garbage collector lets the heap grow past the live memory (by as
// much again with GOGC=100) while the machine has memory to spare: the
// process's peak resident size is up to twice the estimate on a machine
// much larger than the run, and duelctl bounds the heap by 90% of the
// machine's memory (LimitHeap), so that a run whose estimate fits
// collects more often as it nears the bound rather than running out.
func (c *Config) MemoryNeedsOn(device string, ranks int) []MemoryNeed {
	return c.MemoryNeedsAt(device, ranks, datasetSide(c.Dataset))
}

// MemoryNeedsAt is MemoryNeedsOn for images of side x side pixels rather
// than the dataset's: bench step's views, of its --size whatever the
// preset's dataset. Side 0 (an image folder's, known once it is read)
// counts neither the images nor their activations.
func (c *Config) MemoryNeedsAt(device string, ranks, side int) []MemoryNeed {
	host := !strings.HasPrefix(device, "cuda")
	info, known := ssl.Lookup(c.Method)
	sz, _ := resnet.SizeOf(c.Arch, c.Stem == "imagenet", side, side) // zero for an unknown arch, which Validate names
	if side == 0 {
		sz.Activations = 0 // an image folder: the size is known once it is read
	}
	img, act := 4*3*float64(side)*float64(side), 4*float64(sz.Activations)
	local := float64(c.Batch) // this rank's share of the views
	if ranks > 1 {
		local = math.Ceil(local / float64(ranks))
	}
	// Views encoded with gradient and without.
	graded, plain := 2.0, 0.0
	switch {
	case info.Predictor: // BYOL: both views through the online and the target networks
		plain = 2
	case info.Momentum: // MoCo: the query view, and the key view through the key encoder
		graded, plain = 1, 1
	}
	if info.Memory && c.MemoryFrom == "target" {
		plain++ // the target view re-encoded after the update
	}
	batch := local * 2 * img
	if host {
		batch += local * (2*graded + plain) * act
	}
	needs := []MemoryNeed{{"batch", c.Batch, batch, "for the views of the batch and their activations"}}

	// Each parameter is held as its weight, its gradient, the optimizer's
	// state and the momentum network's copy; a checkpoint copies the
	// optimizer's state (and, from a device, the networks) to the host.
	states := 0.0
	switch c.Optimizer {
	case "adam", "adamw":
		states = 2
	case "sgd", "lars":
		if c.Momentum != 0 {
			states = 1
		}
	}
	target := 0.0
	if info.Momentum {
		target = 1
	}
	copies := 2 + 2*states + target // weights, gradients, state and its checkpoint copy, target
	what := "for the encoder's weights, gradients, optimizer state (and its checkpoint copy)"
	if target > 0 {
		what += " and momentum copy"
	}
	if !host {
		copies = 1 + states + target // the checkpoint's host copies
		what = "for the host copies of the encoder and its optimizer state in a checkpoint"
	}
	model := 4 * (copies*float64(sz.Params) + (1+target)*float64(sz.Buffers))
	needs = append(needs, MemoryNeed{"arch", fmt.Sprintf("%q", c.Arch), model, what})
	if !host {
		return append(needs, c.memoryRows(info, known, host, img, act)...)
	}
	trained := 2 + 2*states

	fd, _ := resnet.FeatureDimOf(c.Arch) // 0 for an unknown arch
	feat := float64(fd)
	dim, hidden := float64(c.ProjDim), float64(c.ProjHidden)
	if hidden == 0 && (info.Predictor || c.Method == "barlow") {
		hidden = dim // their projectors keep a hidden layer of --proj-dim
	}
	// The projector's parameters (as the encoder's), and its outputs and
	// their gradients for both views of the batch.
	params := feat * dim
	if hidden > 0 {
		params = feat*hidden + hidden*dim
	}
	head := 4 * ((trained+target)*params + 2*2*local*(hidden+dim))
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
		needs = append(needs, MemoryNeed{flag, got, 4 * trained * 2 * dim * pred, "for " + c.Method + "'s predictor"})
	}
	return append(needs, c.memoryRows(info, known, host, img, act)...)
}

// memoryRows returns the parts of MemoryNeedsOn that the memory drives
// (--memory-size, --mem-negatives, --mem-refresh), none for a method
// without one. host says whether the model computes on the CPU; img and
// act are the bytes of an image and of its activations through the
// encoder.
func (c *Config) memoryRows(info ssl.Info, known, host bool, img, act float64) []MemoryNeed {
	if !known || !info.Memory {
		return nil
	}
	k, z := float64(c.MemorySize), float64(c.ProjDim)
	rows := k * (4*z + 36) // features; ids, steps, uses and fresh (int64), labels (int32)
	// A checkpoint streams the memory to its file (memory.WriteTo) and a
	// resume reads it back into the rows (memory.ReadCheckpoint), in
	// pieces of 64 KiB: no second copy of the rows.
	// Each negative: the logits of every anchor against it, and what it
	// takes to have it: a copy of the row (a draw of fewer than K), or its
	// image re-embedded (D-SimCLR).
	anchors := float64(c.Batch)
	if c.Method == "dsimclr" {
		anchors *= 2
	}
	n := k
	if c.MemNegatives > 0 && c.MemNegatives < c.MemorySize {
		n = float64(c.MemNegatives)
	}
	var perNeg float64
	if c.Negatives != ssl.NegBatch && host {
		perNeg = 4 * anchors
		switch {
		case c.Method == "dsimclr":
			perNeg += img + act + 4*z
		case n < k:
			perNeg += 4 * z
		}
	}
	var needs []MemoryNeed
	what := "for the memory's rows"
	if neg := n * perNeg; n == k || neg == 0 {
		rows += neg
		if neg > 0 {
			what = "for the memory (its rows, and the logits of the batch against them)"
		}
	} else {
		needs = append(needs, MemoryNeed{"mem-negatives", c.MemNegatives, neg, "for the memory's negatives"})
	}
	if c.Policy == "duel" && host {
		adm := memory.Protected
		if a, err := memory.ParseAdmission(c.Admission); err == nil {
			adm = a
		}
		rows += memory.NewDUEL(adm).HostBytes(c.MemorySize, c.ProjDim, c.Batch)
		what += " and the DUEL policy's state"
	}
	needs = append([]MemoryNeed{{"memory-size", c.MemorySize, rows, what}}, needs...)
	if c.MemRefresh > 0 {
		r := float64(min(c.MemRefresh, c.MemorySize))
		per := img
		if host {
			per += act + 4*z
		}
		needs = append(needs, MemoryNeed{"mem-refresh", c.MemRefresh, r * per, "for the memory samples re-embedded per step"})
	}
	return needs
}

// LimitHeap bounds the Go heap by 90% of this machine's memory
// (debug.SetMemoryLimit; CheckMemory's estimates count the live memory, and
// GOGC=100 alone lets the heap grow to twice it) and returns the bound. It
// does nothing, and returns 0, when the GOMEMLIMIT environment variable
// sets a bound or the machine's memory is unknown.
func LimitHeap() int64 {
	have := MachineMemory()
	if os.Getenv("GOMEMLIMIT") != "" || have <= 0 {
		return 0
	}
	limit := have / 10 * 9
	debug.SetMemoryLimit(limit)
	return limit
}

// HeapGrowth is how far, in percent of the live heap, a training lets the
// Go heap grow before the next collection when the GOGC environment
// variable does not say (Go's default is 100). A training's live heap is
// mostly buffers without pointers, recycled from step to step (the
// arena's activations, the memory's rows, the images), and it makes
// little garbage: collecting four times as often costs no measurable time
// and holds much less memory than letting the heap double. Commands that
// allocate a batch's activations afresh (eval, analyze, embed) keep Go's
// default: there, collecting that often costs time.
const HeapGrowth = 25

// CollectSooner sets the garbage collector's target to HeapGrowth, unless
// GOGC is set, and returns the function that restores the previous one.
func CollectSooner() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	prev := debug.SetGCPercent(HeapGrowth)
	return func() { debug.SetGCPercent(prev) }
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
