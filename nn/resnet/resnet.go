// Package resnet builds torchvision's ResNets (ResNet-18/34/50/101/152 with
// BasicBlock and Bottleneck) on package nn, with torchvision's module names
// so that state dicts are interchangeable, PyTorch's default
// initialisation, the ImageNet stem or the CIFAR stem (3x3 stride-1
// convolution, no max-pool) and a configurable base width.
package resnet

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/nn"
)

// Options configures New.
type Options struct {
	// NumClasses is the output size of fc; 0 replaces fc by Identity, so
	// Forward returns the pooled features (FeatureDim of them).
	NumClasses int
	// ImageNetStem selects torchvision's stem (7x7 stride-2 convolution and
	// 3x3 stride-2 max-pool) instead of the CIFAR stem (3x3 stride-1
	// convolution, no max-pool).
	ImageNetStem bool
	// BNSplits > 1 makes every BatchNorm a split (ghost) BatchNorm with that
	// many groups in training mode.
	BNSplits int
	// Seed seeds the initialisation.
	Seed uint64
}

// depths gives the number of blocks per stage and whether the blocks are
// bottlenecks.
var depths = map[int]struct {
	blocks     [4]int
	bottleneck bool
}{
	18:  {[4]int{2, 2, 2, 2}, false},
	34:  {[4]int{3, 4, 6, 3}, false},
	50:  {[4]int{3, 4, 6, 3}, true},
	101: {[4]int{3, 4, 23, 3}, true},
	152: {[4]int{3, 8, 36, 3}, true},
}

// ValidNames describes the architecture names New accepts.
const ValidNames = "resnet18, resnet34, resnet50, resnet101, resnet152, each optionally with -wN for base width N (default 64), e.g. resnet18-w16"

// ResNet is torchvision's ResNet. Its members are conv1, bn1, (maxpool),
// layer1..layer4, avgpool and fc.
type ResNet struct {
	// Name is the architecture name it was built from ("resnet18-w16").
	Name string
	// Width is the base width (64 in torchvision).
	Width int
	// Conv1 and BN1 form the stem; MaxPool is nil with the CIFAR stem.
	Conv1   *nn.Conv2d
	BN1     *nn.BatchNorm
	MaxPool *nn.MaxPool2d
	// Layers are layer1..layer4, Sequentials of blocks.
	Layers  [4]*nn.Sequential
	AvgPool *nn.AdaptiveAvgPool2d
	// FC is the classifier: *nn.Linear, or *nn.Identity to output features.
	FC nn.Module

	featureDim int
}

// UseArena makes the whole network allocate its activations, activation
// gradients and scratch from a (nil: plain allocation). Call a.Reset() at
// the start of every training step.
func (m *ResNet) UseArena(a *nn.Arena) { nn.UseArena(m, a) }

// ParseName splits an architecture name into depth and base width.
func ParseName(name string) (depth, width int, err error) {
	bad := fmt.Errorf("unknown architecture %q: valid names are %s", name, ValidNames)
	base, w, hasW := strings.Cut(name, "-w")
	width = 64
	if hasW {
		width, err = strconv.Atoi(w)
		if err != nil || width < 1 || width > 4096 || strconv.Itoa(width) != w {
			return 0, 0, bad
		}
	}
	d, ok := strings.CutPrefix(base, "resnet")
	if !ok {
		return 0, 0, bad
	}
	depth, err = strconv.Atoi(d)
	if _, known := depths[depth]; err != nil || !known || strconv.Itoa(depth) != d {
		return 0, 0, bad
	}
	return depth, width, nil
}

// FeatureDimOf returns the width of the pooled features of the ResNet
// called name, without building it: 8 x its base width, 32 x with
// bottleneck blocks (New's FeatureDim).
func FeatureDimOf(name string) (int, error) {
	depth, width, err := ParseName(name)
	if err != nil {
		return 0, err
	}
	if depths[depth].bottleneck {
		return 32 * width, nil
	}
	return 8 * width, nil
}

// Size is what the ResNet called name holds, computed from its shapes
// without building it (SizeOf).
type Size struct {
	// Params is the number of its learnable values (convolution weights,
	// BatchNorm weights and biases; no classifier).
	Params int64
	// Buffers is the number of values of its BatchNorm running
	// statistics and batch counters.
	Buffers int64
	// Activations is the number of values its convolutions output for one
	// image of the size given: the inputs of its BatchNorms, which a
	// training step keeps for the backward pass beside the BatchNorm and
	// ReLU outputs the next convolutions read.
	Activations int64
}

// SizeOf returns the Size of the ResNet called name (see ValidNames), with
// the ImageNet stem or the CIFAR one, on images of h x w pixels, from the
// shapes New builds (so that a model too large to build can be sized).
func SizeOf(name string, imageNetStem bool, h, w int) (Size, error) {
	depth, width, err := ParseName(name)
	if err != nil {
		return Size{}, err
	}
	var sz Size
	conv := func(in, out, k, stride, pad int) {
		h, w = (h+2*pad-k)/stride+1, (w+2*pad-k)/stride+1
		sz.Params += int64(out) * int64(in) * int64(k*k)
		sz.Activations += int64(out) * int64(h) * int64(w)
	}
	bn := func(c int) {
		sz.Params += 2 * int64(c)
		sz.Buffers += 2*int64(c) + 1
	}
	if imageNetStem {
		conv(3, width, 7, 2, 3)
		bn(width)
		h, w = (h+2-3)/2+1, (w+2-3)/2+1 // max-pool 3, stride 2, padding 1
	} else {
		conv(3, width, 3, 1, 1)
		bn(width)
	}
	spec := depths[depth]
	in := width
	for s := range 4 {
		planes := width << s
		for b := range spec.blocks[s] {
			stride := 1
			if s > 0 && b == 0 {
				stride = 2
			}
			out := planes
			if spec.bottleneck {
				out = 4 * planes
			}
			h0, w0 := h, w
			if spec.bottleneck {
				conv(in, planes, 1, 1, 0)
				bn(planes)
				conv(planes, planes, 3, stride, 1)
				bn(planes)
				conv(planes, out, 1, 1, 0)
				bn(out)
			} else {
				conv(in, planes, 3, stride, 1)
				bn(planes)
				conv(planes, planes, 3, 1, 1)
				bn(planes)
			}
			if stride != 1 || in != out {
				h1, w1 := h, w
				h, w = h0, w0
				conv(in, out, 1, stride, 0)
				bn(out)
				h, w = h1, w1
			}
			in = out
		}
	}
	return sz, nil
}

// New builds the ResNet called name (see ValidNames) with torchvision's
// initialisation: convolutions kaiming-normal (fan_out, relu), BatchNorm
// weight 1 and bias 0, fc PyTorch's Linear default.
func New(name string, opts Options) (*ResNet, error) {
	depth, width, err := ParseName(name)
	if err != nil {
		return nil, err
	}
	if opts.NumClasses < 0 {
		return nil, fmt.Errorf("resnet %s: NumClasses %d, expected >= 0", name, opts.NumClasses)
	}
	if opts.BNSplits < 0 {
		return nil, fmt.Errorf("resnet %s: BNSplits %d, expected >= 0", name, opts.BNSplits)
	}
	r := rand.New(rand.NewPCG(opts.Seed, 0x7265736e6574))
	spec := depths[depth]
	m := &ResNet{Name: name, Width: width}
	if opts.ImageNetStem {
		m.Conv1 = nn.NewConv2d(3, width, 7, 2, 3, false, r)
		m.MaxPool = nn.NewMaxPool2d(3, 2, 1)
	} else {
		m.Conv1 = nn.NewConv2d(3, width, 3, 1, 1, false, r)
	}
	m.BN1 = nn.NewBatchNorm2d(width)
	in := width
	expansion := 1
	if spec.bottleneck {
		expansion = 4
	}
	for s := range 4 {
		planes := width << s
		stride := 1
		if s > 0 {
			stride = 2
		}
		var blocks []nn.Module
		for b := range spec.blocks[s] {
			st := stride
			if b > 0 {
				st = 1
			}
			if spec.bottleneck {
				blocks = append(blocks, newBottleneck(in, planes, st, r))
			} else {
				blocks = append(blocks, newBasicBlock(in, planes, st, r))
			}
			in = planes * expansion
		}
		m.Layers[s] = nn.NewSequential(blocks...)
	}
	m.featureDim = in
	m.AvgPool = nn.NewAdaptiveAvgPool2d(1, 1)
	// torchvision initialises the convolutions with kaiming_normal_ after
	// construction; the BatchNorms are already at weight 1, bias 0.
	for _, nm := range nn.Modules(m) {
		if c, ok := nm.Module.(*nn.Conv2d); ok {
			nn.KaimingNormalFanOut(c.Weight.Value, r)
		}
	}
	if opts.NumClasses > 0 {
		m.FC = nn.NewLinear(in, opts.NumClasses, true, r)
	} else {
		m.FC = nn.NewIdentity()
	}
	if opts.BNSplits > 1 {
		for _, nm := range nn.Modules(m) {
			if bn, ok := nm.Module.(*nn.BatchNorm); ok {
				bn.Splits = opts.BNSplits
			}
		}
	}
	nn.NameParameters(m)
	return m, nil
}

// FeatureDim returns the size of the pooled features fc receives (512 for
// ResNet-18, 2048 for ResNet-50, scaled by Width/64).
func (m *ResNet) FeatureDim() int { return m.featureDim }

// SetFC replaces the classifier (nn.NewIdentity() drops it).
func (m *ResNet) SetFC(fc nn.Module) {
	m.FC = fc
	nn.NameParameters(m)
}

// Members returns conv1, bn1, maxpool, layer1..layer4, avgpool and fc.
func (m *ResNet) Members() []nn.Member {
	ms := []nn.Member{{Name: "conv1", Module: m.Conv1}, {Name: "bn1", Module: m.BN1}}
	if m.MaxPool != nil {
		ms = append(ms, nn.Member{Name: "maxpool", Module: m.MaxPool})
	}
	for s, l := range m.Layers {
		ms = append(ms, nn.Member{Name: "layer" + strconv.Itoa(s+1), Module: l})
	}
	return append(ms, nn.Member{Name: "avgpool", Module: m.AvgPool}, nn.Member{Name: "fc", Module: m.FC})
}

// Features returns the globally average-pooled features (N, FeatureDim) of
// x (N, 3, H, W): the network without fc.
func (m *ResNet) Features(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
	out := m.BN1.ForwardReLU(tp, m.Conv1.Forward(tp, x))
	if m.MaxPool != nil {
		out = m.MaxPool.Forward(tp, out)
	}
	for _, l := range m.Layers {
		out = l.Forward(tp, out)
	}
	out = m.AvgPool.Forward(tp, out)
	return nn.NewFlatten().Forward(tp, out)
}

// Forward returns fc(Features(x)).
func (m *ResNet) Forward(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
	return m.FC.Forward(tp, m.Features(tp, x))
}

// NamedParameters returns the parameters with torchvision's names.
func (m *ResNet) NamedParameters() []nn.NamedVar { return nn.NamedParameters(m) }

// Parameters returns the parameters in NamedParameters order.
func (m *ResNet) Parameters() []*autograd.Var { return nn.Parameters(m) }

// NamedBuffers returns the BatchNorm buffers with torchvision's names.
func (m *ResNet) NamedBuffers() []nn.NamedBuffer { return nn.NamedBuffers(m) }

// StateDict returns parameters and buffers in torchvision's state_dict order
// and names (sharing storage).
func (m *ResNet) StateDict() nn.StateDict { return nn.StateDictOf(m) }

// LoadStateDict copies sd into the network; see nn.LoadStateDict.
func (m *ResNet) LoadStateDict(sd nn.StateDict, strict bool) error {
	if err := nn.LoadStateDict(m, sd, strict); err != nil {
		return fmt.Errorf("%s: %w", m.Name, err)
	}
	return nil
}

// Train switches training (true) or evaluation (false) mode.
func (m *ResNet) Train(training bool) { nn.Train(m, training) }
