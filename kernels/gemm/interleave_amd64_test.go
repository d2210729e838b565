//go:build amd64 && !noasm

package gemm

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/duel-ssl/duel/internal/cpu"
)

// TestInterleaveAsm checks the scalar, AVX2 (width 16) and AVX-512
// interleaves and the dispatch between them against the Go loop for every
// width, odd strides and power-of-two ones.
func TestInterleaveAsm(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, w := range []int{6, 14, 16, 32} {
		for _, kc := range []int{1, 5, 8, 15, 16, 31, 48, 100} {
			for _, extra := range []int{0, 1, 17, 1024} {
				ld := kc + extra
				src := randSlice(r, (w-1)*ld+kc)
				want := make([]float32, kc*w)
				for p := 0; p < kc; p++ {
					for i := 0; i < w; i++ {
						want[p*w+i] = src[i*ld+p]
					}
				}
				variants := map[string]func(dst []float32) bool{
					"scalar": func(dst []float32) bool { return scalarInterleaveAsm(dst, src, w, ld, kc) },
				}
				if cpu.Detect().AVX2 && w == 16 && kc >= 8 {
					variants["transposeAVX2"] = func(dst []float32) bool {
						transpose16AVX2(&dst[0], &src[0], ld, kc&^7)
						return kc%8 == 0 || scalarInterleaveAsm(dst[(kc&^7)*w:], src[kc&^7:], w, ld, kc%8)
					}
				}
				variants["dispatch"] = func(dst []float32) bool { return interleaveAsm(dst, src, w, ld, kc) }
				if hasTranspose && kc >= 16 {
					variants["transpose"] = func(dst []float32) bool {
						return transposeAsm(dst, src, w, ld, kc&^15) &&
							(kc%16 == 0 || scalarInterleaveAsm(dst[(kc&^15)*w:], src[kc&^15:], w, ld, kc%16))
					}
				}
				for name, f := range variants {
					// One spare element after the panel must stay untouched.
					dst := make([]float32, kc*w+1)
					dst[kc*w] = 42
					if !f(dst[:kc*w]) {
						t.Fatalf("%s: no routine for w=%d", name, w)
					}
					for i := range want {
						if dst[i] != want[i] {
							t.Fatalf("%s w=%d kc=%d ld=%d: dst[%d] = %v, want %v", name, w, kc, ld, i, dst[i], want[i])
						}
					}
					if dst[kc*w] != 42 {
						t.Fatalf("%s w=%d kc=%d: wrote past the panel", name, w, kc)
					}
				}
			}
		}
	}
}

// TestCopyPanelAsm checks copyRows16AVX2 against the Go loop (and that
// it writes nothing past the panel) for odd and power-of-two strides.
func TestCopyPanelAsm(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(13, 14))
	for _, kc := range []int{1, 2, 7, 64, 100} {
		for _, ld := range []int{16, 17, 33, 1024} {
			src := randSlice(r, (kc-1)*ld+16)
			dst := make([]float32, kc*16+1)
			dst[kc*16] = 42
			if !copyPanelAsm(dst[:kc*16], src, 16, ld, kc) {
				t.Fatal("copyPanelAsm declined a 16-wide panel on an AVX2 machine")
			}
			for p := 0; p < kc; p++ {
				for j := 0; j < 16; j++ {
					if dst[p*16+j] != src[p*ld+j] {
						t.Fatalf("kc=%d ld=%d: dst[%d] = %v, want %v", kc, ld, p*16+j, dst[p*16+j], src[p*ld+j])
					}
				}
			}
			if dst[kc*16] != 42 {
				t.Fatalf("kc=%d ld=%d: wrote past the panel", kc, ld)
			}
		}
	}
	if copyPanelAsm(make([]float32, 32), make([]float32, 32), 32, 32, 1) {
		t.Error("copyPanelAsm took a 32-wide panel")
	}
}

// TestPackRowsAsm checks the AVX-512 packRows against the Go loop.
func TestPackRowsAsm(t *testing.T) {
	if !hasTranspose {
		t.Skip("no AVX-512")
	}
	r := rand.New(rand.NewPCG(15, 16))
	for _, w := range []int{6, 14, 16, 32} {
		for _, kc := range []int{1, 2, 7, 40} {
			for _, panels := range []int{1, 2, 5} {
				for _, extra := range []int{0, 3, 1024} {
					ld := panels*w + extra
					src := randSlice(r, (kc-1)*ld+panels*w)
					dst := make([]float32, panels*w*kc+1)
					dst[panels*w*kc] = 42
					if !packRowsAsm(dst[:panels*w*kc], src, w, ld, kc, panels) {
						t.Fatalf("no packRows for w=%d", w)
					}
					for p := 0; p < kc; p++ {
						for q := 0; q < panels; q++ {
							for i := 0; i < w; i++ {
								if got, want := dst[q*w*kc+p*w+i], src[p*ld+q*w+i]; got != want {
									t.Fatalf("w=%d kc=%d panels=%d ld=%d: p=%d q=%d i=%d: %v, want %v", w, kc, panels, ld, p, q, i, got, want)
								}
							}
						}
					}
					if dst[panels*w*kc] != 42 {
						t.Fatalf("w=%d kc=%d panels=%d: wrote past the panels", w, kc, panels)
					}
				}
			}
		}
	}
}

// BenchmarkPackPanel16AVX2 times the AVX2 packing of one 16-wide panel of
// B (kc 256, the row stride of a 32x32 image plane: ld 1024) against its
// peers in the same run: transpose16AVX2 against the scalar interleave16
// (transposed B), copyRows16AVX2 against the Go loop of copy calls (plain
// B). It reports each one's GB/s (bytes packed) and "x-peer", the peer's
// time over the routine's.
//
//	go test -run '^$' -bench PackPanel16AVX2 ./kernels/gemm
func BenchmarkPackPanel16AVX2(b *testing.B) {
	if !hasAVX2 {
		b.Skip("no AVX2")
	}
	const kc, ld = 256, 1024
	src := randSlice(rand.New(rand.NewPCG(1, 2)), kc*ld) // kc rows of plain B, 16 rows of transposed B
	dst := make([]float32, kc*16)
	for _, bc := range []struct {
		name      string
		run, peer func()
	}{
		{"transpose", func() { transpose16AVX2(&dst[0], &src[0], ld, kc) }, func() { interleave16(&dst[0], &src[0], ld, kc) }},
		{"copy", func() { copyRows16AVX2(&dst[0], &src[0], ld, kc) }, func() {
			for p := 0; p < kc; p++ {
				copy(dst[p*16:p*16+16], src[p*ld:p*ld+16])
			}
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				bc.run()
			}
			mine := b.Elapsed()
			start := time.Now()
			for range b.N {
				bc.peer()
			}
			peer := time.Since(start)
			b.ReportMetric(float64(4*kc*16*b.N)/mine.Seconds()/1e9, "GB/s")
			b.ReportMetric(peer.Seconds()/mine.Seconds(), "x-peer")
		})
	}
}
