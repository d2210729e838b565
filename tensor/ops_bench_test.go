package tensor

import (
	"math"
	"testing"
)

// Benchmarks pair each operation with a naive peer run in the same process:
// compare ns/op of BenchmarkX/tensor and BenchmarkX/naive.

func BenchmarkAdd1M(b *testing.B) {
	r := rng(1)
	x, y := RandN(r, 1<<20), RandN(r, 1<<20)
	dst := New(1 << 20)
	b.Run("tensor", func(b *testing.B) {
		b.SetBytes(12 << 20)
		for b.Loop() {
			AddInto(dst, x, y)
		}
	})
	b.Run("alloc", func(b *testing.B) {
		b.SetBytes(12 << 20)
		for b.Loop() {
			Add(x, y)
		}
	})
	b.Run("naive", func(b *testing.B) {
		b.SetBytes(12 << 20)
		d, p, q := dst.Data(), x.Data(), y.Data()
		for b.Loop() {
			for i := range d {
				d[i] = p[i] + q[i]
			}
		}
	})
}

func BenchmarkAddBias(b *testing.B) {
	r := rng(1)
	x, bias := RandN(r, 256, 4096), RandN(r, 4096)
	dst := New(256, 4096)
	b.Run("tensor", func(b *testing.B) {
		for b.Loop() {
			AddInto(dst, x, bias)
		}
	})
	b.Run("naive", func(b *testing.B) {
		d, p, q := dst.Data(), x.Data(), bias.Data()
		for b.Loop() {
			for i := 0; i < 256; i++ {
				for j := 0; j < 4096; j++ {
					d[i*4096+j] = p[i*4096+j] + q[j]
				}
			}
		}
	})
}

func BenchmarkAddSmall(b *testing.B) {
	x, y := Ones(64), Ones(64)
	dst := New(64)
	for b.Loop() {
		AddInto(dst, x, y)
	}
}

func BenchmarkExp1M(b *testing.B) {
	x := RandN(rng(1), 1<<20)
	b.Run("tensor", func(b *testing.B) {
		for b.Loop() {
			Exp(x)
		}
	})
	b.Run("naive", func(b *testing.B) {
		d := make([]float32, 1<<20)
		s := x.Data()
		for b.Loop() {
			for i := range d {
				d[i] = float32(math.Exp(float64(s[i])))
			}
		}
	})
}

// BenchmarkSigmoidTanh1M times Sigmoid and Tanh (through kernels/vecmath's
// exp) against per-element float64 math loops on 2^20 normal values.
func BenchmarkSigmoidTanh1M(b *testing.B) {
	x := RandN(rng(1), 1<<20)
	s := x.Data()
	d := make([]float32, len(s))
	b.Run("Sigmoid", func(b *testing.B) {
		for b.Loop() {
			Sigmoid(x)
		}
	})
	b.Run("sigmoid-math", func(b *testing.B) {
		for b.Loop() {
			for i := range d {
				d[i] = float32(1 / (1 + math.Exp(-float64(s[i]))))
			}
		}
	})
	b.Run("Tanh", func(b *testing.B) {
		for b.Loop() {
			Tanh(x)
		}
	})
	b.Run("tanh-math", func(b *testing.B) {
		for b.Loop() {
			for i := range d {
				d[i] = float32(math.Tanh(float64(s[i])))
			}
		}
	})
}

func BenchmarkSumLastAxis(b *testing.B) {
	x := RandN(rng(1), 1024, 1024)
	b.Run("tensor", func(b *testing.B) {
		for b.Loop() {
			Sum(x, -1, false)
		}
	})
	b.Run("naive", func(b *testing.B) {
		s := x.Data()
		out := make([]float32, 1024)
		for b.Loop() {
			for i := range out {
				var acc float32
				for _, v := range s[i*1024 : i*1024+1024] {
					acc += v
				}
				out[i] = acc
			}
		}
	})
}

func BenchmarkSumAxis0(b *testing.B) {
	x := RandN(rng(1), 1024, 1024)
	b.Run("tensor", func(b *testing.B) {
		for b.Loop() {
			Sum(x, 0, false)
		}
	})
	b.Run("naive", func(b *testing.B) {
		s := x.Data()
		out := make([]float32, 1024)
		for b.Loop() {
			for j := range out {
				var acc float32
				for i := 0; i < 1024; i++ {
					acc += s[i*1024+j]
				}
				out[j] = acc
			}
		}
	})
}

func BenchmarkTransposeCopy(b *testing.B) {
	x := RandN(rng(1), 1024, 1024)
	dst := New(1024, 1024)
	b.Run("tensor", func(b *testing.B) {
		for b.Loop() {
			CopyInto(dst, x.T())
		}
	})
	b.Run("naive", func(b *testing.B) {
		s, out := x.Data(), dst.Data()
		for b.Loop() {
			for i := 0; i < 1024; i++ {
				for j := 0; j < 1024; j++ {
					out[i*1024+j] = s[j*1024+i]
				}
			}
		}
	})
}

// BenchmarkIm2Col is the 3x3, pad 1 convolution of a 64x32x32 image.
func BenchmarkIm2Col(b *testing.B) {
	const c, h, w = 64, 32, 32
	x := RandN(rng(1), c, h, w).Data()
	col := make([]float32, c*9*h*w)
	g := ConvGeom{C: c, H: h, W: w, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1}
	b.Run("tensor", func(b *testing.B) {
		for b.Loop() {
			im2col(col, x, g)
		}
	})
	b.Run("naive", func(b *testing.B) {
		for b.Loop() {
			naiveIm2Col(col, x, c, h, w, 3, 3, 1, 1)
		}
	})
	b.Run("col2im", func(b *testing.B) {
		for b.Loop() {
			col2im(x, col, g)
		}
	})
}

// naiveIm2Col is the textbook loop with a bounds test per element.
func naiveIm2Col(col, x []float32, c, h, w, kh, kw, stride, pad int) {
	oh, ow := (h+2*pad-kh)/stride+1, (w+2*pad-kw)/stride+1
	for ci := 0; ci < c; ci++ {
		for i := 0; i < kh; i++ {
			for j := 0; j < kw; j++ {
				r := (ci*kh+i)*kw + j
				for oy := 0; oy < oh; oy++ {
					for ox := 0; ox < ow; ox++ {
						y, xx := oy*stride+i-pad, ox*stride+j-pad
						v := float32(0)
						if y >= 0 && y < h && xx >= 0 && xx < w {
							v = x[(ci*h+y)*w+xx]
						}
						col[(r*oh+oy)*ow+ox] = v
					}
				}
			}
		}
	}
}

func BenchmarkMatMulTransposed(b *testing.B) {
	r := rng(1)
	a, w := RandN(r, 256, 512), RandN(r, 256, 512)
	dst := New(512, 512)
	b.Run("viewTN", func(b *testing.B) {
		for b.Loop() {
			MatMulInto(dst, a.T(), w, 0)
		}
	})
	b.Run("copyTN", func(b *testing.B) {
		for b.Loop() {
			MatMulInto(dst, a.T().Contiguous(), w, 0)
		}
	})
}

func BenchmarkBatchMatMulSmall(b *testing.B) {
	r := rng(1)
	x, y := RandN(r, 64, 32, 64), RandN(r, 64, 64, 32)
	for b.Loop() {
		BatchMatMul(x, y)
	}
}
