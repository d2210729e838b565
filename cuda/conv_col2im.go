package cuda

import (
	"github.com/duel-ssl/duel/cuda/driver"
	kc "github.com/duel-ssl/duel/kernels/cuda"
	"github.com/duel-ssl/duel/tensor"
)

// col2imTapsKernels are conv_col2im_taps<T>_f32's launchers by T, the
// most taps a side of a phase each takes (1 x 1 and 3 x 3 at stride 2
// take 1 and 2, 7 x 7 at stride 2 takes 4).
var col2imTapsKernels = [...]func(kc.Launcher, kc.Config, driver.DevicePtr, driver.DevicePtr, int32,
	int32, int32, int32, int32, int32, int32, int32, int32, int32, int32, int32) error{
	nil, kc.ConvCol2imTaps1F32, kc.ConvCol2imTaps2F32, kc.ConvCol2imTaps3F32, kc.ConvCol2imTaps4F32,
}

// col2imMaxTaps is the largest T of col2imTapsKernels.
const col2imMaxTaps = len(col2imTapsKernels) - 1

// col2im queues the gather of convInputGradStrided: dx (+)= the taps of
// each input element from dcol (C*K*K x N*OH*OW). conv_col2im_taps<T>_f32
// runs where col2imTaps allows, else conv_col2im_f32; both give the same
// bits (TestConvCol2imTapsEmulated).
func (be *Backend) col2im(op string, dxp, dcol driver.DevicePtr, acc bool, s tensor.ConvShape, a [11]int32) {
	if t, cfg, ok := col2imTaps(s, be.g.Multiprocessors()); ok {
		be.queued(op, col2imTapsKernels[t](be.g, cfg, dxp, dcol, convFlag(acc),
			a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10]))
		return
	}
	n := int64(s.N) * int64(s.In) * int64(s.H) * int64(s.W)
	be.queued(op, kc.ConvCol2imF32(be.g, be.grid(n), dxp, dcol, convFlag(acc),
		a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10]))
}

// col2imBlocksPerSM is the blocks a multiprocessor conv_col2im_taps<T>_f32's
// grid holds in all, each walking its planes: the fastest grid on
// ResNet-50's stride-2 gathers (BenchmarkCol2im; bench/RESULTS.md,
// "NVIDIA H200"). Far more blocks, down to a block row per plane, are
// slower: blocks that short cost more to start than their copies take.
const col2imBlocksPerSM = 64

// col2imTaps returns the taps a side of s's phases, ceil(K / S), and
// conv_col2im_taps<T>_f32's launch for s on a device of sms
// multiprocessors: a thread a map position, 256 a block, the planes (N*C)
// along y, about col2imBlocksPerSM blocks a multiprocessor in all (at
// least one row, at most one a plane and 65535). ok is false where it
// does not apply: more than col2imMaxTaps taps, an empty map or batch, or
// a map or plane count of 2^31 or more.
func col2imTaps(s tensor.ConvShape, sms int) (taps int, cfg kc.Config, ok bool) {
	if s.S < 1 {
		return 0, cfg, false
	}
	taps = (s.K + s.S - 1) / s.S
	hw, planes := int64(s.H)*int64(s.W), int64(s.N)*int64(s.In)
	if taps < 1 || taps > col2imMaxTaps || hw <= 0 || planes <= 0 || hw >= 1<<31 || planes >= 1<<31 {
		return 0, cfg, false
	}
	return taps, planeGrid(hw, planes, sms), true
}

// planeGrid returns the launch of a kernel that runs a thread a map
// position (hw of them, 256 a block) and walks the planes along y
// (conv_col2im_taps<T>_f32, conv_phase_gather_f32): about
// col2imBlocksPerSM blocks a multiprocessor in all, at least one row of
// blocks, at most one a plane and 65535.
func planeGrid(hw, planes int64, sms int) kc.Config {
	gx := (hw + 255) / 256
	gy := max(min(planes, int64(max(sms, 1))*col2imBlocksPerSM/gx, 65535), 1)
	return kc.Config{
		Grid:  driver.Dim3{X: int(gx), Y: int(gy), Z: 1},
		Block: driver.Dim3{X: 256, Y: 1, Z: 1},
	}
}
