package augment

import (
	"math"
	"testing"

	"github.com/duel-ssl/duel/internal/splitmix"
)

func near(a, b float32) bool { return math.Abs(float64(a-b)) < 1e-6 }

// planar builds an Image from per-channel rows.
func planar(c, h, w int, vals ...float32) *Image {
	return &Image{C: c, H: h, W: w, Pix: append([]float32(nil), vals...)}
}

func checkPix(t *testing.T, name string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", name, len(got), len(want))
	}
	for i := range got {
		if !near(got[i], want[i]) {
			t.Fatalf("%s: value %d = %v, want %v (all: %v)", name, i, got[i], want[i], got)
		}
	}
}

func TestFlipAndIdentityCrop(t *testing.T) {
	// A 2x3 gray image, HWC with C = 1:  1 2 3 / 4 5 6.
	src := []float32{1, 2, 3, 4, 5, 6}
	dst := &Image{}
	dst.reset(1, 2, 3)
	ResizedCrop(dst, src, 2, 3, 1, 0, 0, 2, 3, true)
	checkPix(t, "hflip", dst.Pix, []float32{3, 2, 1, 6, 5, 4})
	ResizedCrop(dst, src, 2, 3, 1, 0, 0, 2, 3, false)
	checkPix(t, "identity", dst.Pix, src)
	// An RGB 2x2 image: crop (1, 1, 1, 1) of a 2x2 image is pixel (1, 1).
	rgb := []float32{0, 0, 0, 0, 0, 0, 0, 0, 0, 0.1, 0.2, 0.3}
	one := &Image{}
	one.reset(3, 1, 1)
	ResizedCrop(one, rgb, 2, 2, 3, 1, 1, 1, 1, false)
	checkPix(t, "rgb crop", one.Pix, []float32{0.1, 0.2, 0.3})
	// Crop (1, 1, 2, 2) of a 3x3 RGB image at its own size is the block.
	var img []float32
	for i := 0; i < 27; i++ {
		img = append(img, float32(i))
	}
	blk := &Image{}
	blk.reset(3, 2, 2)
	ResizedCrop(blk, img, 3, 3, 3, 1, 1, 2, 2, false)
	// pixel (y, x) channel k is img[(y*3+x)*3+k]: (1,1)=12.., (1,2)=15.., (2,1)=21.., (2,2)=24..
	checkPix(t, "rgb block", blk.Pix, []float32{12, 15, 21, 24, 13, 16, 22, 25, 14, 17, 23, 26})
}

func TestResizedCropU8MatchesFloat(t *testing.T) {
	r := splitmix.New(2)
	for _, c := range []int{1, 3} {
		src := testImage(20, 17, c)
		fs := make([]float32, len(src))
		for i, v := range src {
			fs[i] = float32(v) / 255
		}
		for i := 0; i < 200; i++ {
			top, left, ch, cw := CropParams(&r, 20, 17, [2]float64{0.05, 1}, [2]float64{0.5, 2})
			flip := i%2 == 0
			size := 1 + r.Intn(40)
			a, b := &Image{}, &Image{}
			a.reset(c, size, size+1)
			b.reset(c, size, size+1)
			ResizedCrop(a, fs, 20, 17, c, top, left, ch, cw, flip)
			var tx, ty axisTable
			resizedCropU8(b, src, 17, c, top, left, ch, cw, flip, &tx, &ty, nil)
			for k := range a.Pix {
				if math.Abs(float64(a.Pix[k]-b.Pix[k])) > 1e-5 {
					t.Fatalf("c=%d crop %v: value %d: float path %v, uint8 path %v", c, []int{top, left, ch, cw}, k, a.Pix[k], b.Pix[k])
				}
			}
		}
	}
}

func TestBilinearUpscale(t *testing.T) {
	// Width 2 -> 4 with half-pixel centres, like torch's interpolate
	// (bilinear, align_corners=False): sources -0.25 (clamped to 0), 0.25,
	// 0.75, 1.25 (clamped to the last pixel).
	dst := &Image{}
	dst.reset(1, 1, 4)
	ResizedCrop(dst, []float32{0, 1}, 1, 2, 1, 0, 0, 1, 2, false)
	checkPix(t, "upscale", dst.Pix, []float32{0, 0.25, 0.75, 1})
	ResizedCrop(dst, []float32{0, 1}, 1, 2, 1, 0, 0, 1, 2, true)
	checkPix(t, "upscale flipped", dst.Pix, []float32{1, 0.75, 0.25, 0})
	// Downscale 4 -> 2: sources 0.5 and 2.5.
	dst.reset(1, 1, 2)
	ResizedCrop(dst, []float32{0, 1, 2, 3}, 1, 4, 1, 0, 0, 1, 4, false)
	checkPix(t, "downscale", dst.Pix, []float32{0.5, 2.5})
}

func TestColorOps(t *testing.T) {
	m := planar(1, 1, 2, 0.5, 0.8)
	AdjustBrightness(m, 1.5)
	checkPix(t, "brightness", m.Pix, []float32{0.75, 1}) // 0.8*1.5 clamps to 1

	m = planar(1, 1, 2, 0.2, 0.6) // mean 0.4
	AdjustContrast(m, 0.5)
	checkPix(t, "contrast gray", m.Pix, []float32{0.3, 0.5})

	// RGB contrast: mean of the luma of (1,0,0) and (0,0,1) is (0.2989+0.114)/2.
	m = planar(3, 1, 2, 1, 0, 0, 0, 0, 1)
	AdjustContrast(m, 0)
	mu := float32(0.20645)
	checkPix(t, "contrast rgb", m.Pix, []float32{mu, mu, mu, mu, mu, mu})

	m = planar(3, 1, 1, 1, 0, 0)
	AdjustSaturation(m, 0)
	checkPix(t, "saturation 0", m.Pix, []float32{0.2989, 0.2989, 0.2989})
	m = planar(3, 1, 1, 0.5, 0.4, 0.3) // luma 0.14945 + 0.2348 + 0.0342 = 0.41845
	AdjustSaturation(m, 2)
	checkPix(t, "saturation 2", m.Pix, []float32{2*0.5 - 0.41845, 2*0.4 - 0.41845, 2*0.3 - 0.41845})

	m = planar(3, 1, 1, 0.2, 0.4, 0.6)
	Grayscale(m)
	checkPix(t, "grayscale", m.Pix, []float32{0.36298, 0.36298, 0.36298}) // 0.05978 + 0.2348 + 0.0684

	g := planar(1, 1, 1, 0.7)
	AdjustSaturation(g, 0)
	AdjustHue(g, 0.3)
	Grayscale(g)
	checkPix(t, "1-channel no-ops", g.Pix, []float32{0.7})
}

func TestHue(t *testing.T) {
	for _, c := range []struct {
		name string
		in   [3]float32
		f    float32
		want [3]float32
	}{
		{"red+1/3=green", [3]float32{1, 0, 0}, 1.0 / 3, [3]float32{0, 1, 0}},
		{"red-1/3=blue", [3]float32{1, 0, 0}, -1.0 / 3, [3]float32{0, 0, 1}},
		{"green+1/3=blue", [3]float32{0, 1, 0}, 1.0 / 3, [3]float32{0, 0, 1}},
		{"red+1/6=yellow", [3]float32{1, 0, 0}, 1.0 / 6, [3]float32{1, 1, 0}},
		{"half turn", [3]float32{0.5, 0.25, 0.25}, 0.5, [3]float32{0.25, 0.5, 0.5}},
		{"gray unchanged", [3]float32{0.4, 0.4, 0.4}, 0.2, [3]float32{0.4, 0.4, 0.4}},
		{"zero shift", [3]float32{0.9, 0.3, 0.6}, 0, [3]float32{0.9, 0.3, 0.6}},
	} {
		m := planar(3, 1, 1, c.in[0], c.in[1], c.in[2])
		AdjustHue(m, c.f)
		for k := range 3 {
			if math.Abs(float64(m.Pix[k]-c.want[k])) > 1e-5 {
				t.Errorf("%s: got %v, want %v", c.name, m.Pix, c.want)
				break
			}
		}
	}
}

// torchHue is torchvision's adjust_hue on one pixel, step by step
// (_rgb2hsv, (h + f) % 1, _hsv2rgb), in float64.
func torchHue(r, g, b, f float64) [3]float64 {
	maxc := math.Max(r, math.Max(g, b))
	minc := math.Min(r, math.Min(g, b))
	eqc := maxc == minc
	cr := maxc - minc
	ones := 1.0
	den := maxc
	if eqc {
		den = ones
	}
	s := cr / den
	crd := cr
	if eqc {
		crd = ones
	}
	rc, gc, bc := (maxc-r)/crd, (maxc-g)/crd, (maxc-b)/crd
	var h float64
	if maxc == r {
		h = bc - gc
	} else if maxc == g {
		h = 2 + rc - bc
	} else {
		h = 4 + gc - rc
	}
	h = math.Mod(h/6+1, 1)
	h = math.Mod(math.Mod(h+f, 1)+1, 1)
	v := maxc
	i := math.Floor(h * 6)
	fr := h*6 - i
	cl := func(x float64) float64 { return math.Max(0, math.Min(1, x)) }
	p, q, t := cl(v*(1-s)), cl(v*(1-s*fr)), cl(v*(1-s*(1-fr)))
	switch int(i) % 6 {
	case 0:
		return [3]float64{v, t, p}
	case 1:
		return [3]float64{q, v, p}
	case 2:
		return [3]float64{p, v, t}
	case 3:
		return [3]float64{p, q, v}
	case 4:
		return [3]float64{t, p, v}
	}
	return [3]float64{v, p, q}
}

func TestHueMatchesTorchvisionAlgorithm(t *testing.T) {
	r := splitmix.New(5)
	for i := 0; i < 20000; i++ {
		in := [3]float32{float32(r.Float64()), float32(r.Float64()), float32(r.Float64())}
		if i%5 == 0 { // ties between channels
			in[1] = in[0]
		}
		f := float32(r.Uniform(-0.5, 0.5))
		gr, gg, gb := hueShift(in[0], in[1], in[2], f)
		want := torchHue(float64(in[0]), float64(in[1]), float64(in[2]), float64(f))
		for k, got := range [3]float32{gr, gg, gb} {
			if math.Abs(float64(got)-want[k]) > 2e-6 {
				t.Fatalf("hue of %v by %v: got (%v %v %v), want %v", in, f, gr, gg, gb, want)
			}
		}
	}
}

func TestNormalize(t *testing.T) {
	m := planar(2, 1, 2, 0.5, 1, 0, 0.25)
	dst := make([]float32, 4)
	Normalize(dst, m, []float32{0.5, 0.25}, []float32{0.25, 0.5})
	checkPix(t, "normalize", dst, []float32{0, 2, -0.5, 0})
	Normalize(dst, m, nil, nil)
	checkPix(t, "identity", dst, m.Pix)
}

func TestGaussian(t *testing.T) {
	k := GaussianKernel(3, 1, nil)
	e := float32(math.Exp(-0.5))
	s := 1 + 2*e
	checkPix(t, "kernel", k, []float32{e / s, 1 / s, e / s})
	for _, c := range [][3]int{{-1, 5, 1}, {5, 5, 3}, {-2, 5, 2}, {0, 1, 0}, {6, 5, 2}} {
		if got := reflect(c[0], c[1]); got != c[2] {
			t.Errorf("reflect(%d, %d) = %d, want %d", c[0], c[1], got, c[2])
		}
	}
	// A constant image stays constant; a 1x3 impulse spreads by the kernel
	// with reflect padding: [0,1,0] -> [2e/s, 1/s, 2e/s] horizontally only.
	m := planar(1, 3, 3, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5)
	GaussianBlur(m, k, make([]float32, 9))
	checkPix(t, "constant", m.Pix, []float32{0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5})
	imp := planar(1, 1, 3, 0, 1, 0)
	GaussianBlur(imp, GaussianKernel(3, 1, nil), make([]float32, 3))
	// Vertically a 1-row image reflects onto itself: weights sum to 1.
	checkPix(t, "impulse", imp.Pix, []float32{2 * e / s, 1 / s, 2 * e / s})
}

func TestGaussianBlurMatchesNaive(t *testing.T) {
	r := splitmix.New(4)
	for _, k := range []int{3, 5, 7} {
		m := &Image{}
		m.reset(2, 7, 9)
		for i := range m.Pix {
			m.Pix[i] = float32(r.Float64())
		}
		want := make([]float64, len(m.Pix))
		kern := GaussianKernel(k, 1.3, nil)
		for c := 0; c < 2; c++ {
			for y := 0; y < 7; y++ {
				for x := 0; x < 9; x++ {
					var s float64
					for i := 0; i < k; i++ {
						for j := 0; j < k; j++ {
							yy, xx := reflect(y+i-k/2, 7), reflect(x+j-k/2, 9)
							s += float64(kern[i]) * float64(kern[j]) * float64(m.Pix[c*63+yy*9+xx])
						}
					}
					want[c*63+y*9+x] = s
				}
			}
		}
		GaussianBlur(m, kern, make([]float32, 63))
		for i, v := range m.Pix {
			if math.Abs(float64(v)-want[i]) > 1e-5 {
				t.Fatalf("k=%d value %d: %v, want %v", k, i, v, want[i])
			}
		}
	}
}

func TestCropParams(t *testing.T) {
	r := splitmix.New(1)
	for i := 0; i < 2000; i++ {
		top, left, ch, cw := CropParams(&r, 32, 24, [2]float64{0.08, 1}, [2]float64{3.0 / 4, 4.0 / 3})
		if ch <= 0 || cw <= 0 || top < 0 || left < 0 || top+ch > 32 || left+cw > 24 {
			t.Fatalf("crop (%d, %d, %d, %d) outside 32x24", top, left, ch, cw)
		}
	}
	if top, left, ch, cw := CropParams(&r, 32, 32, [2]float64{1, 1}, [2]float64{1, 1}); top != 0 || left != 0 || ch != 32 || cw != 32 {
		t.Fatalf("full crop: %d %d %d %d", top, left, ch, cw)
	}
	// Impossible ratio: the fallback centre crop clamps the ratio to 2.
	if top, left, ch, cw := CropParams(&r, 32, 32, [2]float64{1, 1}, [2]float64{2, 2}); top != 8 || left != 0 || ch != 16 || cw != 32 {
		t.Fatalf("fallback: %d %d %d %d", top, left, ch, cw)
	}
}

func TestFlipProbability(t *testing.T) {
	// A 1x2 image (0, 255): the first output value tells whether it flipped.
	p := &Pipeline{FlipP: 0.75}
	dst := make([]float32, 2)
	var ws Workspace
	const n = 20000
	flips := 0
	for i := 0; i < n; i++ {
		r := splitmix.New(splitmix.Derive(3, uint64(i)))
		p.Apply(dst, []uint8{0, 255}, 1, 2, 1, &r, &ws)
		if dst[0] == 1 {
			flips++
		}
	}
	se := math.Sqrt(0.75 * 0.25 / n)
	if f := float64(flips) / n; math.Abs(f-0.75) > 3*se {
		t.Fatalf("flip frequency %.4f, want 0.75 ± %.4f", f, 3*se)
	}
}

func TestGrayscaleProbability(t *testing.T) {
	// A colourful image: a view is gray exactly when RandomGrayscale fired.
	src := testImage(8, 8, 3)
	p := Paper(8, nil, nil)
	dst := make([]float32, 3*64)
	var ws Workspace
	const n = 20000
	gray := 0
	for i := 0; i < n; i++ {
		r := splitmix.New(splitmix.Derive(5, uint64(i)))
		p.Apply(dst, src, 8, 8, 3, &r, &ws)
		same := true
		for k := 0; k < 64 && same; k++ {
			same = dst[k] == dst[64+k] && dst[k] == dst[128+k]
		}
		if same {
			gray++
		}
	}
	se := math.Sqrt(0.2 * 0.8 / n)
	if f := float64(gray) / n; math.Abs(f-0.2) > 3*se {
		t.Fatalf("grayscale frequency %.4f, want 0.2 ± %.4f", f, 3*se)
	}
}

func testImage(h, w, c int) []uint8 {
	img := make([]uint8, h*w*c)
	for i := range img {
		img[i] = uint8(i*37 + i/7)
	}
	return img
}

func TestPresetsDeterministicAndValid(t *testing.T) {
	src := testImage(32, 32, 3)
	mean, std := []float32{0.49, 0.48, 0.45}, []float32{0.25, 0.24, 0.26}
	for _, name := range PresetNames {
		for _, size := range []int{32, 24, 64} {
			p, err := Preset(name, size, mean, std)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Validate(3); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			oh, ow := p.OutSize(32, 32)
			a, b := make([]float32, 3*oh*ow), make([]float32, 3*oh*ow)
			var ws1, ws2 Workspace
			for i := 0; i < 50; i++ {
				r1, r2 := splitmix.New(uint64(i)), splitmix.New(uint64(i))
				p.Apply(a, src, 32, 32, 3, &r1, &ws1)
				p.Apply(b, src, 32, 32, 3, &r2, &ws2)
				for k := range a {
					if a[k] != b[k] || math.IsNaN(float64(a[k])) {
						t.Fatalf("%s size %d: view %d differs or is NaN at %d", name, size, i, k)
					}
					// Normalised values of [0, 1] pixels stay in range.
					lo, hi := (0-mean[k/(oh*ow)])/std[k/(oh*ow)], (1-mean[k/(oh*ow)])/std[k/(oh*ow)]
					if a[k] < lo-1e-4 || a[k] > hi+1e-4 {
						t.Fatalf("%s: value %v outside [%v, %v]", name, a[k], lo, hi)
					}
				}
			}
		}
	}
	if _, err := Preset("autoaugment", 32, nil, nil); err == nil {
		t.Fatal("unknown preset accepted")
	}
}

func TestNoneIsNormalizedInput(t *testing.T) {
	src := testImage(4, 4, 3)
	dst := make([]float32, 48)
	var ws Workspace
	r := splitmix.New(0)
	None(0, nil, nil).Apply(dst, src, 4, 4, 3, &r, &ws)
	for i := 0; i < 16; i++ {
		for c := 0; c < 3; c++ {
			if !near(dst[c*16+i], float32(src[i*3+c])/255) {
				t.Fatalf("pixel %d channel %d = %v, want %v", i, c, dst[c*16+i], float32(src[i*3+c])/255)
			}
		}
	}
}

func TestValidate(t *testing.T) {
	bad := []*Pipeline{
		{Size: -1},
		{FlipP: 1.5},
		{GrayP: math.NaN()},
		{Crop: &Crop{Scale: [2]float64{0, 1}, Ratio: [2]float64{1, 1}}},
		{Crop: &Crop{Scale: [2]float64{0.5, 0.2}, Ratio: [2]float64{1, 1}}},
		{Crop: &Crop{Scale: [2]float64{0.5, 1}, Ratio: [2]float64{2, 1}}},
		{Jitter: &Jitter{Hue: 0.7, P: 1}},
		{Jitter: &Jitter{Brightness: -1, P: 1}},
		{Blur: &Blur{Kernel: 4, Sigma: [2]float64{0.1, 2}, P: 1}},
		{Mean: []float32{0.5}},
		{Std: []float32{0, 1, 1}},
	}
	for i, p := range bad {
		if err := p.Validate(3); err == nil {
			t.Errorf("case %d (%+v): no error", i, p)
		}
	}
}

func TestApplyAllocatesNothing(t *testing.T) {
	src := testImage(32, 32, 3)
	p := MoCoV2(32, nil, nil)
	dst := make([]float32, 3*32*32)
	var ws Workspace
	r := splitmix.New(1)
	p.Apply(dst, src, 32, 32, 3, &r, &ws)
	allocs := testing.AllocsPerRun(100, func() { p.Apply(dst, src, 32, 32, 3, &r, &ws) })
	if allocs > 0.1 {
		t.Fatalf("Apply allocates %.1f times per view", allocs)
	}
}

func benchPreset(b *testing.B, p *Pipeline) {
	src := testImage(32, 32, 3)
	dst := make([]float32, 3*32*32)
	var ws Workspace
	r := splitmix.New(1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p.Apply(dst, src, 32, 32, 3, &r, &ws)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "views/s")
}

func BenchmarkPaper32(b *testing.B)  { benchPreset(b, Paper(32, nil, nil)) }
func BenchmarkMoCoV232(b *testing.B) { benchPreset(b, MoCoV2(32, nil, nil)) }
func BenchmarkHue(b *testing.B) {
	m := FromHWC(testImage(32, 32, 3), 32, 32, 3)
	for i := 0; i < b.N; i++ {
		AdjustHue(m, 0.05)
	}
}
