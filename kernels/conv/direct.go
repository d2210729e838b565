package conv

// The direct path (DirectForward, DirectWeightGrad, DirectInputGrad): 3x3 padding-1 convolutions of stride 1 or 2
// computed by the kernels of this package straight from the channel-major planes, without
// a patch matrix (narrow layers spend as long building one as multiplying
// it). At stride 2 the kernels read the input through its four phase
// planes (even/odd rows and columns), split per cache-sized run of images.
// The input gradient is, at stride 1, the same convolution of the output
// gradient with the flipped, transposed kernel, at stride 2 four such
// convolutions, one per phase of the input; the weight gradient has its own
// kernel. The batch is split into chunks of images over goroutines
// (coarsePlan), the weight gradient statically, as weightGrad does, so
// that no sum depends on timing.

// directOK reports whether the direct kernels handle g: a 3x3 padding-1
// convolution of stride 1 or 2 whose output maps hold whole 16-position
// vectors.
func (g geom) directOK() bool {
	return g.k == 3 && g.p == 1 && Supported(g.h, g.w, g.s)
}

// directChunk returns how many images of the input fit half of the L2
// cache (ChunkPositions): the chunk of the weight gradient, and the
// run of images whose phases (stride 2) or channel-major copy (NCHW input)
// the kernels read at once.
func (g geom) directChunk() int {
	return max(1, min(g.n, ChunkPositions(g.cin)/(g.h*g.w)))
}

// directRun returns how many images each kernel call covers: the whole
// chunk when the kernels read the input in place, else directChunk.
func (g geom) directRun() int {
	if g.s == 1 && g.xcm {
		return g.n
	}
	return g.directChunk()
}

// directBuf is a goroutine's scratch of the direct path: the channel-major
// copy of a run of an NCHW input (or of the input gradient) and the phase
// planes of a run at stride 2.
type directBuf struct{ in, ph []float32 }

// directBufs returns a directBuf per goroutine for runs of g.directRun()
// images.
func directBufs(sc Scratch, g geom, pl *Plan, threads int) []directBuf {
	run := min(g.directRun(), g.n)
	bs := make([]directBuf, threads)
	for w := range bs {
		if !g.xcm {
			bs[w].in = get(sc, g.cin*run*g.h*g.w)
		}
		if g.s == 2 {
			bs[w].ph = get(sc, PhasesLen(pl, g.cin, run))
		}
	}
	return bs
}

// putDirectBufs gives the buffers of bs back to sc.
func putDirectBufs(sc Scratch, bs []directBuf) {
	for _, b := range bs {
		if b.in != nil {
			put(sc, b.in)
		}
		if b.ph != nil {
			put(sc, b.ph)
		}
	}
}

// runs calls f(i, m) for the runs [i, i+m) of at most run images covering
// [n0, n0+cnt).
func runs(n0, cnt, run int, f func(i, m int)) {
	for i := n0; i < n0+cnt; i += run {
		f(i, min(run, n0+cnt-i))
	}
}

// input returns images [i, i+m) of xd (layout g.xcm) as the kernels read
// them, and the stride of their planes: channel-major planes (in place, or
// copied into b.in from NCHW: image by image, NCHW planes of 4 KiB put the
// masked loads of the image edges across page boundaries, which costs this
// CPU more than the copy), split into phases in b.ph at stride 2.
func (g geom) input(pl *Plan, b directBuf, xd []float32, i, m int) ([]float32, int) {
	hw := g.h * g.w
	x, ld := xd[i*hw:], g.n*hw
	if !g.xcm {
		for ci := range g.cin {
			for j := range m {
				copy(b.in[(ci*m+j)*hw:][:hw], xd[((i+j)*g.cin+ci)*hw:][:hw])
			}
		}
		x, ld = b.in, m*hw
	}
	if g.s == 2 {
		Phases(pl, b.ph, x, ld, g.cin, m)
		return b.ph, PhasesLen(pl, 1, m)
	}
	return x, ld
}

// directThreads returns the chunking of the forward pass and the input
// gradient.
func (g geom) directThreads() (chunk, threads int) {
	chunk, threads, _, _ = coarsePlan(g.n, g.n, g.flops())
	return chunk, threads
}

// directForward writes the convolution of xd (layout g.xcm) with the
// (Out, In, 3, 3) weight wd into yd (channel-major).
func directForward(sc Scratch, g geom, pl *Plan, wd, xd, yd []float32) {
	buf := get(sc, FilterLen(g.cout, g.cin))
	defer put(sc, buf)
	f := PackFilter(buf, wd, g.cout, g.cin, false)
	chunk, threads := g.directThreads()
	bs := directBufs(sc, g, pl, threads)
	defer putDirectBufs(sc, bs)
	ohw := g.oh * g.ow
	runChunks(g.n, chunk, threads, false, func(w, n0, cnt int) {
		runs(n0, cnt, g.directRun(), func(i, m int) {
			x, ldx := g.input(pl, bs[w], xd, i, m)
			Forward(pl, &f, yd[i*ohw:], g.n*ohw, x, ldx, m, false)
		})
	})
}

// directInputGrad writes (adds, when acc) the input gradient dx (layout
// g.xcm) of the convolution from the output gradient dy (channel-major).
func directInputGrad(sc Scratch, g geom, pl *Plan, wd, dy, dx []float32, acc bool) {
	var f Filter
	var fs InputGradFilters
	var buf []float32
	if g.s == 1 {
		buf = get(sc, FilterLen(g.cin, g.cout))
		f = PackFilter(buf, wd, g.cout, g.cin, true)
	} else {
		buf = get(sc, InputGradFiltersLen(g.cout, g.cin))
		fs = PackInputGradFilters(pl, buf, wd, g.cout, g.cin)
	}
	defer put(sc, buf)
	chunk, threads := g.directThreads()
	bs := directBufs(sc, g, pl, threads)
	defer putDirectBufs(sc, bs)
	hw, ohw := g.h*g.w, g.oh*g.ow
	runChunks(g.n, chunk, threads, false, func(w, n0, cnt int) {
		runs(n0, cnt, g.directRun(), func(i, m int) {
			// The gradient of images [i, i+m), channel-major: in place, or
			// in b.in, then added into the NCHW dx.
			d, ld, a := dx[i*hw:], g.n*hw, acc
			if !g.xcm {
				d, ld, a = bs[w].in, m*hw, false
			}
			if g.s == 1 {
				Forward(pl, &f, d, ld, dy[i*ohw:], g.n*ohw, m, a)
			} else {
				InputGrad(pl, &fs, d, ld, dy[i*ohw:], g.n*ohw, bs[w].ph, m, a)
			}
			if !g.xcm {
				addImages(dx, d, g, i, m, acc)
			}
		})
	})
}

// addImages writes (adds, when acc) the channel-major gradient d of
// images [i, i+m) into the NCHW dx of g.
func addImages(dx, d []float32, g geom, i, m int, acc bool) {
	hw := g.h * g.w
	for ci := range g.cin {
		for j := range m {
			src := d[(ci*m+j)*hw:][:hw]
			dst := dx[((i+j)*g.cin+ci)*hw:][:hw]
			if acc {
				for q, v := range src {
					dst[q] += v
				}
			} else {
				copy(dst, src)
			}
		}
	}
}

// directWeightGrad writes (adds, when acc) the weight gradient dw of the
// convolution of xd (layout g.xcm) from dy (channel-major).
func directWeightGrad(sc Scratch, g geom, pl *Plan, xd, dy, dw []float32, acc bool) {
	chunk, threads, _, _ := coarsePlan(g.n, g.directChunk(), g.flops())
	bs := directBufs(sc, g, pl, threads)
	defer putDirectBufs(sc, bs)
	ohw := g.oh * g.ow
	weightGrad(sc, g.cout, dw, acc, sumInPlace, g.n, chunk, threads, func(w, n0, cnt int, dst []float32, b float32) {
		runs(n0, cnt, g.directRun(), func(i, m int) {
			x, ldx := g.input(pl, bs[w], xd, i, m)
			WeightGrad(pl, dst, dy[i*ohw:], g.n*ohw, x, ldx, g.cout, g.cin, m, b != 0 || i > n0)
		})
	})
}
