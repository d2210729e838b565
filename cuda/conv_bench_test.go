package cuda

import (
	"testing"

	"github.com/duel-ssl/duel/tensor"
)

// BenchmarkConv times the passes of ResNet CIFAR layers of 256 images on
// the GPU and reports GFLOP/s (2*Out*In*K*K*N*OH*OW flops per pass,
// device time from events): 3 x 3, stride 1, padding 1, 64 -> 64 channels
// on 32 x 32 maps (conv.cu's 64 x 64 kernels; sub-benchmarks without a
// prefix) and 128 -> 128 on 16 x 16 (the wide kernels, "Wide/"), in FP32;
// then, from compute capability 8.0, those two, ResNet-50's 1 x 1
// 64 -> 256 on 32 x 32 (conv_tc.cu's dense path) and its 3 x 3 128 -> 128
// at stride 2 from 32 x 32 (the strided input gradient by dcol and its
// gather, its checked gather as "Stride2/InputGradChecked", its phases
// as "Stride2/InputGradPhases" and, each phase writing dx itself,
// "Stride2/InputGradPhasesDirect"), and its 1 x 1 256 -> 512 at stride 2
// (the downsampling shortcut, "Down1x1/": one phase of four has a tap)
// in TF32 and BF16 ("tf32/", "bf16/", "tf32/Wide/", "tf32/1x1/",
// "tf32/Stride2/", ...; bench/gpu_peer.py times cuDNN on the same layers
// with and without TF32; TCAuto: the *_tf32rr kernels, and on compute
// capability 9.0 conv_wg.cu's wgmma kernels), and the TF32 ones again
// with TCV2's kernels, which round each panel in shared memory
// ("tf32v2/"), with TCV4's *_tf32rl kernels ("tf32v4/"), and on compute
// capability 9.0 with TCV3's *_tf32rr kernels ("tf32v3/").
// GPU only.
func BenchmarkConv(b *testing.B) {
	d := needGPU(b)
	be, err := newBackend(d, 256)
	if err != nil {
		b.Fatal(err)
	}
	layer := tensor.ConvShape{N: 256, In: 64, Out: 64, H: 32, W: 32, K: 3, S: 1, P: 1}
	wide := tensor.ConvShape{N: 256, In: 128, Out: 128, H: 16, W: 16, K: 3, S: 1, P: 1}
	expand := tensor.ConvShape{N: 256, In: 64, Out: 256, H: 32, W: 32, K: 1, S: 1, P: 0, ChannelMajor: true}
	stride2 := tensor.ConvShape{N: 256, In: 128, Out: 128, H: 32, W: 32, K: 3, S: 2, P: 1, ChannelMajor: true}
	down := tensor.ConvShape{N: 256, In: 256, Out: 512, H: 32, W: 32, K: 1, S: 2, P: 0, ChannelMajor: true}
	benchConvLayer(b, d, be, "", layer)
	benchConvLayer(b, d, be, "Wide/", wide)
	for _, p := range []Precision{TF32, BF16} {
		if be.SetPrecision(p) != p {
			continue // below compute capability 8.0
		}
		benchConvLayer(b, d, be, p.String()+"/", layer)
		benchConvLayer(b, d, be, p.String()+"/Wide/", wide)
		benchConvLayer(b, d, be, p.String()+"/1x1/", expand)
		benchConvLayer(b, d, be, p.String()+"/Stride2/", stride2)
		benchConvLayer(b, d, be, p.String()+"/Down1x1/", down)
		be.checkedStrided = true
		benchConvPasses(b, d, be, p.String()+"/Stride2/", stride2, "InputGradChecked")
		be.checkedStrided = false
		be.phasesStrided = true
		benchConvPasses(b, d, be, p.String()+"/Stride2/", stride2, "InputGradPhases")
		benchConvPasses(b, d, be, p.String()+"/Down1x1/", down, "InputGradPhases")
		be.phasesDirect = true
		benchConvPasses(b, d, be, p.String()+"/Stride2/", stride2, "InputGradPhasesDirect")
		benchConvPasses(b, d, be, p.String()+"/Down1x1/", down, "InputGradPhasesDirect")
		be.phasesStrided, be.phasesDirect = false, false
	}
	if be.SetPrecision(TF32) == TF32 { // TCV2: rounding each panel in shared memory
		be.SetTCKernel(TCV2)
		benchConvLayer(b, d, be, "tf32v2/", layer)
		benchConvLayer(b, d, be, "tf32v2/Wide/", wide)
		benchConvLayer(b, d, be, "tf32v2/1x1/", expand)
		benchConvLayer(b, d, be, "tf32v2/Stride2/", stride2)
		be.SetTCKernel(TCV4) // the *_tf32rl kernels
		benchConvLayer(b, d, be, "tf32v4/", layer)
		benchConvLayer(b, d, be, "tf32v4/Wide/", wide)
		benchConvLayer(b, d, be, "tf32v4/1x1/", expand)
		benchConvLayer(b, d, be, "tf32v4/Stride2/", stride2)
		benchConvLayer(b, d, be, "tf32v4/Down1x1/", down)
		if be.cc == 90 { // TCAuto ran conv_wg.cu's kernels: TCV3's rr kernels beside them
			be.SetTCKernel(TCV3)
			benchConvLayer(b, d, be, "tf32v3/", layer)
			benchConvLayer(b, d, be, "tf32v3/Wide/", wide)
			benchConvLayer(b, d, be, "tf32v3/1x1/", expand)
			benchConvLayer(b, d, be, "tf32v3/Stride2/", stride2)
			benchConvLayer(b, d, be, "tf32v3/Down1x1/", down)
		}
		be.SetTCKernel(TCAuto)
	}
	be.SetPrecision(FP32)
}

// benchConvLayer times the three passes of s, as sub-benchmarks named
// prefix + pass.
func benchConvLayer(b *testing.B, d *Device, be *Backend, prefix string, s tensor.ConvShape) {
	benchConvPasses(b, d, be, prefix, s, "Forward", "InputGrad", "WeightGrad")
}

// benchConvPasses times the named passes of s (Forward, InputGrad or
// InputGradChecked, WeightGrad), as sub-benchmarks named prefix + pass.
func benchConvPasses(b *testing.B, d *Device, be *Backend, prefix string, s tensor.ConvShape, passes ...string) {
	oh, ow := s.OutH(), s.OutW()
	op := func(n int) tensor.Operand {
		return tensor.Operand{Buf: be.Alloc(n), Shape: []int{n}, Strides: []int{1}}
	}
	x, dx := op(s.N*s.In*s.H*s.W), op(s.N*s.In*s.H*s.W)
	y, dy := op(s.Out*s.N*oh*ow), op(s.Out*s.N*oh*ow)
	w, dw, bias := op(s.Out*s.In*s.K*s.K), op(s.Out*s.In*s.K*s.K), op(s.Out)
	al := be.ConvAlgos(s, 0)
	flops := 2 * float64(s.Out*s.In*s.K*s.K) * float64(s.N*oh*ow)
	inputGrad := func() { be.ConvInputGrad(dx, dy, w, s, al, nil, false) }
	runs := map[string]func(){
		"Forward":               func() { be.ConvForward(y, x, w, bias, s, al, false) },
		"InputGrad":             inputGrad,
		"InputGradChecked":      inputGrad,
		"InputGradPhases":       inputGrad,
		"InputGradPhasesDirect": inputGrad,
		"WeightGrad":            func() { be.ConvWeightGrad(dw, dy, x, s, al, false) },
	}
	for _, name := range passes {
		run := runs[name]
		b.Run(prefix+name, func(b *testing.B) {
			run() // warm the kernel cache and the allocator
			if err := be.Synchronize(); err != nil {
				b.Fatal(err)
			}
			per := deviceLoop(b, d, run)
			b.ReportMetric(flops/per.Seconds()/1e9, "GFLOP/s")
		})
	}
}
