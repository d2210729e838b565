package resnet

import (
	"math/rand/v2"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/nn"
)

// BasicBlock is torchvision's two-convolution residual block (ResNet-18/34):
// relu(bn2(conv2(relu(bn1(conv1(x))))) + downsample(x)).
type BasicBlock struct {
	Conv1, Conv2 *nn.Conv2d
	BN1, BN2     *nn.BatchNorm
	Downsample   *nn.Sequential // nil when the shortcut is the identity
}

func newBasicBlock(in, planes, stride int, r *rand.Rand) *BasicBlock {
	b := &BasicBlock{
		Conv1: nn.NewConv2d(in, planes, 3, stride, 1, false, r),
		BN1:   nn.NewBatchNorm2d(planes),
		Conv2: nn.NewConv2d(planes, planes, 3, 1, 1, false, r),
		BN2:   nn.NewBatchNorm2d(planes),
	}
	b.Downsample = newDownsample(in, planes, stride, r)
	return b
}

// Members returns conv1, bn1, conv2, bn2 and downsample, torchvision's names.
func (b *BasicBlock) Members() []nn.Member {
	ms := []nn.Member{
		{Name: "conv1", Module: b.Conv1}, {Name: "bn1", Module: b.BN1},
		{Name: "conv2", Module: b.Conv2}, {Name: "bn2", Module: b.BN2},
	}
	if b.Downsample != nil {
		ms = append(ms, nn.Member{Name: "downsample", Module: b.Downsample})
	}
	return ms
}

// Forward applies the block.
func (b *BasicBlock) Forward(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
	out := b.BN1.ForwardReLU(tp, b.Conv1.Forward(tp, x))
	return b.BN2.ForwardAddReLU(tp, b.Conv2.Forward(tp, out), shortcut(tp, b.Downsample, x))
}

// Bottleneck is torchvision's (v1.5) three-convolution residual block
// (ResNet-50 and deeper), with the stride on the 3x3 convolution and an
// output of 4 times planes channels.
type Bottleneck struct {
	Conv1, Conv2, Conv3 *nn.Conv2d
	BN1, BN2, BN3       *nn.BatchNorm
	Downsample          *nn.Sequential // nil when the shortcut is the identity
}

func newBottleneck(in, planes, stride int, r *rand.Rand) *Bottleneck {
	b := &Bottleneck{
		Conv1: nn.NewConv2d(in, planes, 1, 1, 0, false, r),
		BN1:   nn.NewBatchNorm2d(planes),
		Conv2: nn.NewConv2d(planes, planes, 3, stride, 1, false, r),
		BN2:   nn.NewBatchNorm2d(planes),
		Conv3: nn.NewConv2d(planes, planes*4, 1, 1, 0, false, r),
		BN3:   nn.NewBatchNorm2d(planes * 4),
	}
	b.Downsample = newDownsample(in, planes*4, stride, r)
	return b
}

// Members returns conv1, bn1, conv2, bn2, conv3, bn3 and downsample.
func (b *Bottleneck) Members() []nn.Member {
	ms := []nn.Member{
		{Name: "conv1", Module: b.Conv1}, {Name: "bn1", Module: b.BN1},
		{Name: "conv2", Module: b.Conv2}, {Name: "bn2", Module: b.BN2},
		{Name: "conv3", Module: b.Conv3}, {Name: "bn3", Module: b.BN3},
	}
	if b.Downsample != nil {
		ms = append(ms, nn.Member{Name: "downsample", Module: b.Downsample})
	}
	return ms
}

// Forward applies the block.
func (b *Bottleneck) Forward(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
	out := b.BN1.ForwardReLU(tp, b.Conv1.Forward(tp, x))
	out = b.BN2.ForwardReLU(tp, b.Conv2.Forward(tp, out))
	return b.BN3.ForwardAddReLU(tp, b.Conv3.Forward(tp, out), shortcut(tp, b.Downsample, x))
}

// newDownsample returns the 1x1 convolution + BatchNorm shortcut needed when
// the block changes resolution or width, nil otherwise.
func newDownsample(in, out, stride int, r *rand.Rand) *nn.Sequential {
	if stride == 1 && in == out {
		return nil
	}
	return nn.NewSequential(nn.NewConv2d(in, out, 1, stride, 0, false, r), nn.NewBatchNorm2d(out))
}

func shortcut(tp *autograd.Tape, ds *nn.Sequential, x *autograd.Var) *autograd.Var {
	if ds == nil {
		return x
	}
	return ds.Forward(tp, x)
}
