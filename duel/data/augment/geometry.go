package augment

import (
	"math"

	"github.com/duel-ssl/duel/internal/splitmix"
)

// CropParams draws the crop of torchvision's RandomResizedCrop.get_params
// for an h x w image: up to 10 attempts with an area fraction ~ U(scale) and
// a log-uniform aspect ratio in ratio, and a centre crop with the ratio
// clamped as fallback. It returns the crop's top, left, height and width.
func CropParams(r *splitmix.RNG, h, w int, scale, ratio [2]float64) (top, left, ch, cw int) {
	area := float64(h * w)
	for attempt := 0; attempt < 10; attempt++ {
		target := area * r.Uniform(scale[0], scale[1])
		aspect := r.ExpUniform(ratio[0], ratio[1])
		cw = int(math.RoundToEven(math.Sqrt(target * aspect)))
		ch = int(math.RoundToEven(math.Sqrt(target / aspect)))
		if cw > 0 && cw <= w && ch > 0 && ch <= h {
			top = r.Intn(h - ch + 1)
			left = r.Intn(w - cw + 1)
			return top, left, ch, cw
		}
	}
	in := float64(w) / float64(h)
	switch {
	case in < ratio[0]:
		cw = w
		ch = int(math.RoundToEven(float64(cw) / ratio[0]))
	case in > ratio[1]:
		ch = h
		cw = int(math.RoundToEven(float64(ch) * ratio[1]))
	default:
		cw, ch = w, h
	}
	return (h - ch) / 2, (w - cw) / 2, ch, cw
}

// axisTable holds, for every output coordinate along one axis, the two
// source coordinates and the weight of the second, for bilinear resampling
// with half-pixel centres (align_corners=False), as torch's interpolate.
type axisTable struct {
	i0, i1 []int32
	f      []float32
}

func (t *axisTable) build(crop, offset, out int, flip bool) {
	if cap(t.i0) < out {
		t.i0, t.i1, t.f = make([]int32, out), make([]int32, out), make([]float32, out)
	}
	t.i0, t.i1, t.f = t.i0[:out], t.i1[:out], t.f[:out]
	scale := float64(crop) / float64(out)
	for o := 0; o < out; o++ {
		s := (float64(o)+0.5)*scale - 0.5
		if s < 0 {
			s = 0
		}
		i0 := int(s)
		if i0 > crop-1 {
			i0 = crop - 1
		}
		i1 := min(i0+1, crop-1)
		d := o
		if flip {
			d = out - 1 - o
		}
		t.i0[d], t.i1[d], t.f[d] = int32(offset+i0), int32(offset+i1), float32(s-float64(i0))
	}
}

// ResizedCrop writes into dst (already shaped C x H x W) the region
// (top, left, ch, cw) of the HWC float image src (h x w x c, values in
// [0, 1]), resized bilinearly to dst's size and mirrored left-right when
// flip is set: torchvision's resized_crop followed by hflip.
func ResizedCrop(dst *Image, src []float32, h, w, c, top, left, ch, cw int, flip bool) {
	var tx, ty axisTable
	resizedCrop(dst, src, w, c, top, left, ch, cw, flip, &tx, &ty)
}

func resizedCrop(dst *Image, src []float32, w, c, top, left, ch, cw int, flip bool, tx, ty *axisTable) {
	oh, ow := dst.H, dst.W
	tx.build(cw, left, ow, flip)
	ty.build(ch, top, oh, false)
	n := oh * ow
	if c == 3 {
		p0, p1, p2 := dst.Pix[:n], dst.Pix[n:2*n], dst.Pix[2*n:3*n]
		for y := 0; y < oh; y++ {
			r0 := src[int(ty.i0[y])*w*3 : (int(ty.i0[y])+1)*w*3]
			r1 := src[int(ty.i1[y])*w*3 : (int(ty.i1[y])+1)*w*3]
			fy := ty.f[y]
			o := y * ow
			for x := 0; x < ow; x++ {
				a, b, fx := int(tx.i0[x])*3, int(tx.i1[x])*3, tx.f[x]
				t0 := r0[a] + fx*(r0[b]-r0[a])
				b0 := r1[a] + fx*(r1[b]-r1[a])
				t1 := r0[a+1] + fx*(r0[b+1]-r0[a+1])
				b1 := r1[a+1] + fx*(r1[b+1]-r1[a+1])
				t2 := r0[a+2] + fx*(r0[b+2]-r0[a+2])
				b2 := r1[a+2] + fx*(r1[b+2]-r1[a+2])
				p0[o+x] = t0 + fy*(b0-t0)
				p1[o+x] = t1 + fy*(b1-t1)
				p2[o+x] = t2 + fy*(b2-t2)
			}
		}
		return
	}
	for k := 0; k < c; k++ {
		p := dst.Pix[k*n : (k+1)*n]
		for y := 0; y < oh; y++ {
			r0 := src[int(ty.i0[y])*w*c:]
			r1 := src[int(ty.i1[y])*w*c:]
			fy := ty.f[y]
			for x := 0; x < ow; x++ {
				a, b, fx := int(tx.i0[x])*c+k, int(tx.i1[x])*c+k, tx.f[x]
				t := r0[a] + fx*(r0[b]-r0[a])
				bt := r1[a] + fx*(r1[b]-r1[a])
				p[y*ow+x] = t + fy*(bt-t)
			}
		}
	}
}

// resizedCropU8 is resizedCrop reading the 8-bit source directly, scaled
// to [0, 1]. It is separable: the ch source rows of the crop are first
// interpolated horizontally into rows (ch x ow x c, interleaved), then each
// output row blends two of them, which costs fewer multiplications and
// conversions than four taps per output value when the crop is upscaled.
func resizedCropU8(dst *Image, src []uint8, w, c, top, left, ch, cw int, flip bool, tx, ty *axisTable, rows []float32) []float32 {
	oh, ow := dst.H, dst.W
	tx.build(cw, left, ow, flip)
	ty.build(ch, top, oh, false)
	rw := ow * c
	if cap(rows) < ch*rw {
		rows = make([]float32, ch*rw)
	}
	rows = rows[:ch*rw]
	const s = 1.0 / 255
	for r := 0; r < ch; r++ {
		in := src[(top+r)*w*c : (top+r+1)*w*c]
		out := rows[r*rw : (r+1)*rw]
		if c == 3 {
			for x := 0; x < ow; x++ {
				a, b, fx := int(tx.i0[x])*3, int(tx.i1[x])*3, tx.f[x]*s
				a0, a1, a2 := float32(in[a])*s, float32(in[a+1])*s, float32(in[a+2])*s
				out[3*x] = a0 + fx*(float32(in[b])-float32(in[a]))
				out[3*x+1] = a1 + fx*(float32(in[b+1])-float32(in[a+1]))
				out[3*x+2] = a2 + fx*(float32(in[b+2])-float32(in[a+2]))
			}
			continue
		}
		for x := 0; x < ow; x++ {
			a, b, fx := int(tx.i0[x])*c, int(tx.i1[x])*c, tx.f[x]*s
			for k := 0; k < c; k++ {
				out[x*c+k] = float32(in[a+k])*s + fx*(float32(in[b+k])-float32(in[a+k]))
			}
		}
	}
	n := oh * ow
	for y := 0; y < oh; y++ {
		r0 := rows[(int(ty.i0[y])-top)*rw : (int(ty.i0[y])-top+1)*rw]
		r1 := rows[(int(ty.i1[y])-top)*rw : (int(ty.i1[y])-top+1)*rw]
		fy := ty.f[y]
		o := y * ow
		if c == 3 {
			p0, p1, p2 := dst.Pix[o:o+ow], dst.Pix[n+o:n+o+ow], dst.Pix[2*n+o:2*n+o+ow]
			for x := range p0 {
				p0[x] = r0[3*x] + fy*(r1[3*x]-r0[3*x])
				p1[x] = r0[3*x+1] + fy*(r1[3*x+1]-r0[3*x+1])
				p2[x] = r0[3*x+2] + fy*(r1[3*x+2]-r0[3*x+2])
			}
			continue
		}
		for k := 0; k < c; k++ {
			p := dst.Pix[k*n+o : k*n+o+ow]
			for x := range p {
				p[x] = r0[x*c+k] + fy*(r1[x*c+k]-r0[x*c+k])
			}
		}
	}
	return rows
}
