package igemm

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/duel-ssl/duel/kernels/gemm"
)

// BenchmarkMul times the DUEL memory's product at the shapes: B
// batch rows against K+B rows of Z grid values, and reports GMAC/s.
//
//	go test -run=^$ -bench=BenchmarkMul ./kernels/igemm
func BenchmarkMul(b *testing.B) {
	for _, s := range [][3]int{{2048, 256, 256}, {4096, 256, 128}, {8192, 512, 128}} {
		k, bs, z := s[0], s[1], s[2]
		b.Run(fmt.Sprintf("K=%d,B=%d,Z=%d", k, bs, z), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			n := k + bs
			a := randInt16(rng, bs*z, 2049)
			var p Packed
			p.Pack(randInt16(rng, n*z, 2049), z, n, z)
			c := make([]int32, bs*n)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				Mul(c, n, a, z, bs, &p)
			}
			macs := float64(bs) * float64(n) * float64(z) * float64(b.N)
			b.ReportMetric(macs/b.Elapsed().Seconds()/1e9, "GMAC/s")
		})
	}
}

// BenchmarkSgemmPeer times the same products as BenchmarkMul with float32
// SGEMM (kernels/gemm), the path the DUEL memory used before, for a ratio
// in the same run.
func BenchmarkSgemmPeer(b *testing.B) {
	for _, s := range [][3]int{{2048, 256, 256}, {4096, 256, 128}, {8192, 512, 128}} {
		k, bs, z := s[0], s[1], s[2]
		b.Run(fmt.Sprintf("K=%d,B=%d,Z=%d", k, bs, z), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			n := k + bs
			a := toFloat(randInt16(rng, bs*z, 2049))
			bm := toFloat(randInt16(rng, n*z, 2049))
			c := make([]float32, bs*n)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				gemm.Sgemm(false, true, bs, n, z, 1, a, z, bm, z, 0, c, n)
			}
			macs := float64(bs) * float64(n) * float64(z) * float64(b.N)
			b.ReportMetric(macs/b.Elapsed().Seconds()/1e9, "GMAC/s")
		})
	}
}

// toFloat returns v converted to float32.
func toFloat(v []int16) []float32 {
	f := make([]float32, len(v))
	for i, x := range v {
		f[i] = float32(x)
	}
	return f
}

// BenchmarkKernels times the product at m=256, n=2304, k=256 (the DUEL
// memory's B x (K+B) x Z at K=2048, B=Z=256) with float32 gemm.Sgemm on the
// same integers first (sub-benchmark "sgemm", the peer, at gemm.ISA()),
// then with each available igemm kernel on the same threads as Mul. Each
// reports GMAC/s; the kernels also report x-sgemm, their speed over the
// peer's fastest run earlier in the same process at the same GOMAXPROCS (a
// conservative ratio on a noisy machine; not reported when the peer was
// filtered out by -bench).
//
//	go test -run=^$ -bench=BenchmarkKernels ./kernels/igemm
func BenchmarkKernels(b *testing.B) {
	const m, n, k = 256, 2304, 256
	rng := rand.New(rand.NewPCG(1, 2))
	a := randInt16(rng, m*k, 2049)
	bm := randInt16(rng, n*k, 2049)
	macs := float64(m) * float64(n) * float64(k)
	sgemmNs := map[int]float64{} // by GOMAXPROCS (-cpu)
	b.Run("sgemm/"+gemm.ISA(), func(b *testing.B) {
		af, bf := toFloat(a), toFloat(bm)
		c := make([]float32, m*n)
		for b.Loop() {
			gemm.Sgemm(false, true, m, n, k, 1, af, k, bf, k, 0, c, n)
		}
		ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		if old, ok := sgemmNs[runtime.GOMAXPROCS(0)]; !ok || ns < old {
			sgemmNs[runtime.GOMAXPROCS(0)] = ns
		}
		b.ReportMetric(macs*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
	})
	var p Packed
	p.Pack(bm, k, n, k)
	for _, kn := range available {
		b.Run(kn.String(), func(b *testing.B) {
			c := make([]int32, m*n)
			for b.Loop() {
				mul(c, n, a, k, m, []*Packed{&p}, kn)
			}
			ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.ReportMetric(macs/ns, "GMAC/s")
			if peer, ok := sgemmNs[runtime.GOMAXPROCS(0)]; ok {
				b.ReportMetric(peer/ns, "x-sgemm")
			}
		})
	}
}
