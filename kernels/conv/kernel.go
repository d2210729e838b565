package conv

import (
	"math"
	"unsafe"
)

// fwdFunc is the signature of the forward micro-kernels: the mr x nv*16
// block of y at y (rows ldy apart) from k input channels at x (ldx apart),
// the weights w (mr per tap and channel, taps outer), the offsets off of
// ntap taps and the masks (masks[v*9+t] for vector v and tap t); added to y
// when acc != 0.
type fwdFunc func(k, ntap int, x *float32, ldx int, w *float32, off *[9]int, masks *uint16, y *float32, ldy int, acc int)

// wgradFunc is the signature of the weight-gradient micro-kernels: over n
// vectors j of maps w wide and their lanes l, out[r*9+t] += dy[r*ldy+16j+l]
// * x[16j+(t/3-1)*w+t%3-1+l] (masked by masks[j*9+t]) for the kernel's rows
// r, each lane summed in vector order, then the lanes pairwise (see
// gen_kernels.go).
type wgradFunc func(n int, x, dy *float32, ldy int, w int, masks *uint16, out *float32)

// wgradS2Func is wgradFunc at stride 2: x points at the first of four
// phase planes plane floats apart, w is the output width, and tap t reads
// phase (t/3 != 1)*2 + (t%3 != 1), a row up when t/3 == 0 and a column
// left when t%3 == 0.
type wgradS2Func func(n int, x, dy *float32, ldy int, plane, w int, masks *uint16, out *float32)

// at returns the float p+i elements past p (i may be negative); callers
// only read elements inside the slice p points into.
func at(p *float32, i int) float32 {
	return *(*float32)(unsafe.Add(unsafe.Pointer(p), i*4))
}

// maddBF16 returns acc plus the products of the bfloat16 pairs in the
// 32-bit words of a and b (their float32 bits), the upper halves' first,
// as VDPBF16PS adds them.
func maddBF16(acc, a, b float32) float32 {
	ua, ub := math.Float32bits(a), math.Float32bits(b)
	acc += math.Float32frombits(ua&0xffff0000) * math.Float32frombits(ub&0xffff0000)
	return acc + math.Float32frombits(ua<<16)*math.Float32frombits(ub<<16)
}

// fwdGo is the forward micro-kernel in plain Go, for tile t: the loop the
// assembly kernels run, with separate multiply and add; with bf16 over
// words of bfloat16 pairs (maddBF16).
func fwdGo(t tile, bf16 bool) fwdFunc {
	return func(k, ntap int, x *float32, ldx int, w *float32, off *[9]int, masks *uint16, y *float32, ldy int, acc int) {
		mr, nv := t.mr, t.nv
		var accs [16 * maxNV * Lanes]float32
		ms := unsafe.Slice(masks, nv*9)
		ws := unsafe.Slice(w, ntap*k*mr)
		for tap := range ntap {
			for ci := range k {
				wr := ws[(tap*k+ci)*mr:][:mr]
				for v := range nv {
					m := ms[v*9+tap]
					for l := range Lanes {
						if m&(1<<l) == 0 {
							continue
						}
						xv := at(x, ci*ldx+v*Lanes+off[tap]+l)
						for r, wv := range wr {
							i := (r*nv+v)*Lanes + l
							if bf16 {
								accs[i] = maddBF16(accs[i], wv, xv)
							} else {
								accs[i] += wv * xv
							}
						}
					}
				}
			}
		}
		ys := unsafe.Slice(y, (mr-1)*ldy+nv*Lanes)
		for r := range mr {
			row := ys[r*ldy:][:nv*Lanes]
			for j := range row {
				if acc != 0 {
					row[j] += accs[r*nv*Lanes+j]
				} else {
					row[j] = accs[r*nv*Lanes+j]
				}
			}
		}
	}
}

// wgradGo is the weight-gradient micro-kernel in plain Go for mr rows;
// with bf16 over words of bfloat16 pairs (maddBF16).
func wgradGo(mr int, bf16 bool) wgradFunc {
	return func(n int, x, dy *float32, ldy int, w int, masks *uint16, out *float32) {
		ms := unsafe.Slice(masks, n*9)
		var part [3 * 9 * Lanes]float32
		for j := range n {
			for tap := range 9 {
				m := ms[j*9+tap]
				for l := range Lanes {
					if m&(1<<l) == 0 {
						continue
					}
					xv := at(x, j*Lanes+(tap/3-1)*w+tap%3-1+l)
					for r := range mr {
						i, d := (r*9+tap)*Lanes+l, at(dy, r*ldy+j*Lanes+l)
						if bf16 {
							part[i] = maddBF16(part[i], d, xv)
						} else {
							part[i] += d * xv
						}
					}
				}
			}
		}
		os := unsafe.Slice(out, mr*9)
		for i := range os {
			os[i] += hsum(part[i*Lanes:][:Lanes])
		}
	}
}

// wgradS2Go is the stride-2 weight-gradient micro-kernel in plain Go for
// mr rows; with bf16 over words of bfloat16 pairs (maddBF16).
func wgradS2Go(mr int, bf16 bool) wgradS2Func {
	return func(n int, x, dy *float32, ldy int, plane, w int, masks *uint16, out *float32) {
		ms := unsafe.Slice(masks, n*9)
		var part [3 * 9 * Lanes]float32
		for j := range n {
			for tap := range 9 {
				m := ms[j*9+tap]
				ph, sh := 0, 0
				if tap/3 != 1 {
					ph += 2
				}
				if tap%3 != 1 {
					ph++
				}
				if tap/3 == 0 {
					sh -= w
				}
				if tap%3 == 0 {
					sh--
				}
				for l := range Lanes {
					if m&(1<<l) == 0 {
						continue
					}
					xv := at(x, ph*plane+j*Lanes+sh+l)
					for r := range mr {
						i, d := (r*9+tap)*Lanes+l, at(dy, r*ldy+j*Lanes+l)
						if bf16 {
							part[i] = maddBF16(part[i], d, xv)
						} else {
							part[i] += d * xv
						}
					}
				}
			}
		}
		os := unsafe.Slice(out, mr*9)
		for i := range os {
			os[i] += hsum(part[i*Lanes:][:Lanes])
		}
	}
}

// hsum adds 16 lanes in the assembly kernels' order: (l, l+8), (l, l+4),
// (l, l+2), (0, 1).
func hsum(v []float32) float32 {
	var a [8]float32
	for l := range 8 {
		a[l] = v[l] + v[l+8]
	}
	for l := range 4 {
		a[l] += a[l+4]
	}
	for l := range 2 {
		a[l] += a[l+2]
	}
	return a[0] + a[1]
}
