package conv

// winogradShape reports whether g is a convolution Winograd F(2x2, 3x3)
// computes: 3x3, stride 1, padding 1.
func (g geom) winogradShape() bool { return g.k == 3 && g.s == 1 && g.p == 1 }

// winogradWeightGradPays reports whether Auto runs the weight gradient
// of a Winograd convolution through Winograd too: from 128 input and output
// channels (BenchmarkWinogradWeightGrad on a Zen 4, medians of 3: 1.15-1.6x
// on the ResNet-18 shapes; with 64 channels 0.95-1.0x, the transforms
// costing about what the GEMMs save).
func winogradWeightGradPays(g geom) bool { return g.cin >= 128 && g.cout >= 128 }

// winogradPays reports whether Winograd beats im2col on g (a 3x3 stride-1
// padding-1 convolution), from BenchmarkWinograd (batch 8 to 128, medians
// of 3): it does from 64 input and output channels on maps of at least 4x4
// when the batch has at least winoMinPayTiles tiles (1.05-1.3x forward,
// 1.0-1.4x backward), not with fewer channels (the transforms cost as much
// as the GEMMs save: 0.5x for the 3-channel stem, 0.8x for 16 and 32
// channels), on 2x2 maps (one tile per image, 0.7x forward) nor on few
// tiles (8 images of 512 channels at 4x4, 32 tiles: 0.76x forward), where
// transforming the kernels costs more than the GEMMs save. With fewer than
// 128 channels it also needs maps of at least 16x16: 128 images of 64
// channels at 8x8 ran forward + backward at 0.89-0.99x (median 0.95x of 5)
// of im2col through Winograd (forward 0.85-0.99x), while 128 channels at
// 4x4 gained 1.0-1.07x and 64 channels at 16x16 0.99-1.13x forward.
func winogradPays(g geom) bool {
	th, tw := g.winoTiles()
	wide := g.cin >= 128 && g.cout >= 128 || g.oh >= 16 && g.ow >= 16
	return g.cin >= 64 && g.cout >= 64 && g.oh >= 4 && g.ow >= 4 && wide && g.n*th*tw >= winoMinPayTiles
}

// winoMinPayTiles is the fewest tiles (2x2 outputs) in a batch for which
// Auto picks Winograd.
const winoMinPayTiles = 128
