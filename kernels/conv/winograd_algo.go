package conv

// winogradShape reports whether g is a convolution Winograd F(2x2, 3x3)
// computes: 3x3, stride 1, padding 1.
func (g geom) winogradShape() bool { return g.k == 3 && g.s == 1 && g.p == 1 }

// winogradWeightGradPays reports whether Auto runs the weight gradient
// of a Winograd convolution through Winograd too: from 128 input and output
// channels (BenchmarkWinogradWeightGrad on a Zen 4, medians of 3, on the
// ResNet-18 shapes; with 64 channels the transforms cost about what the
// GEMMs save).
func winogradWeightGradPays(g geom) bool { return g.cin >= 128 && g.cout >= 128 }

// winogradPays reports whether Winograd beats im2col on g (a 3x3 stride-1
// padding-1 convolution), from BenchmarkWinograd (batch 8 to 128, medians
// of 3): it does from 64 input and output channels on maps of at least 4x4
// when the batch has at least winoMinPayTiles tiles, not with fewer
// channels (the transforms cost as much as the GEMMs save), on 2x2 maps
// (one tile per image) nor on few tiles, where transforming the kernels
// costs more than the GEMMs save. With fewer than 128 channels it also
// needs maps of at least 16x16: 64 channels at 8x8 ran slightly slower
// through Winograd than through im2col.
func winogradPays(g geom) bool {
	th, tw := g.winoTiles()
	wide := g.cin >= 128 && g.cout >= 128 || g.oh >= 16 && g.ow >= 16
	return g.cin >= 64 && g.cout >= 64 && g.oh >= 4 && g.ow >= 4 && wide && g.n*th*tw >= winoMinPayTiles
}

// winoMinPayTiles is the fewest tiles (2x2 outputs) in a batch for which
// Auto picks Winograd.
const winoMinPayTiles = 128
