package augment

import (
	"fmt"
	"math"
	"sort"
	"testing"

	"github.com/duel-ssl/duel/internal/splitmix"
)

// The draws of the pipeline come from splitmix, not torch's generator, so
// they are compared with torchvision's in distribution: histograms of
// RandomResizedCrop.get_params recorded by gen_fixtures.py, ColorJitter's
// factor ranges read from torchvision, and the recipes' probabilities.
// Every sample uses fixed seeds, so each test is deterministic; the
// thresholds (z = 4, p ~ 3e-5) only decide how large a deviation fails.

// chi2TwoSample returns the two-sample chi-square statistic of the
// histograms a and b (bins keyed alike) and its degrees of freedom. Bins
// with fewer than 10 draws in both samples together are pooled into one.
func chi2TwoSample(a, b map[string]int) (stat float64, df int) {
	var na, nb float64
	keys := map[string]bool{}
	for k, v := range a {
		na += float64(v)
		keys[k] = true
	}
	for k, v := range b {
		nb += float64(v)
		keys[k] = true
	}
	ka, kb := math.Sqrt(nb/na), math.Sqrt(na/nb)
	var poolA, poolB float64
	bins := 0
	add := func(x, y float64) {
		d := ka*x - kb*y
		stat += d * d / (x + y)
		bins++
	}
	for k := range keys {
		x, y := float64(a[k]), float64(b[k])
		if x+y < 10 {
			poolA, poolB = poolA+x, poolB+y
			continue
		}
		add(x, y)
	}
	if poolA+poolB > 0 {
		add(poolA, poolB)
	}
	return stat, bins - 1
}

// chi2Z maps a chi-square statistic with df degrees of freedom to a
// standard normal deviate (Wilson-Hilferty); df 0 gives 0.
func chi2Z(stat float64, df int) float64 {
	if df <= 0 {
		return 0
	}
	k := float64(df)
	return (math.Cbrt(stat/k) - (1 - 2/(9*k))) / math.Sqrt(2/(9*k))
}

const maxZ = 4

func intHist(counts []int) map[string]int {
	m := map[string]int{}
	for i, c := range counts {
		if c > 0 {
			m[fmt.Sprint(i)] = c
		}
	}
	return m
}

// cropDraws samples CropParams n times and returns the histograms of the
// crop size ("hxw"), the top and the left offsets.
func cropDraws(seed uint64, n, h, w int, scale, ratio [2]float64) (sizes, tops, lefts map[string]int) {
	r := splitmix.New(seed)
	sizes, top, left := map[string]int{}, make([]int, h), make([]int, w)
	for range n {
		i, j, ch, cw := CropParams(&r, h, w, scale, ratio)
		sizes[fmt.Sprintf("%dx%d", ch, cw)]++
		top[i]++
		left[j]++
	}
	return sizes, intHist(top), intHist(left)
}

// TestCropParamsDistributionMatchesTorchvision compares CropParams with
// torchvision's RandomResizedCrop.get_params: the joint distribution of the
// crop's height and width (which holds the acceptance of the 10 attempts
// and the fallback's centre crop) and the distributions of its position.
// Two configurations make the fallback frequent: 12x40 and 40x12 images,
// whose aspect ratio is outside (3/4, 4/3), with scale (0.3, 1).
func TestCropParamsDistributionMatchesTorchvision(t *testing.T) {
	f := parityFixtures(t)
	if len(f.CropHists) == 0 {
		t.Fatal("parity.json has no crop histograms")
	}
	const n = 200000
	for i, hc := range f.CropHists {
		sizes, tops, lefts := cropDraws(splitmix.Derive(11, uint64(i)), n, hc.H, hc.W, hc.Scale, hc.Ratio)
		for _, c := range []struct {
			name     string
			ours, tv map[string]int
		}{
			{"size", sizes, hc.Sizes},
			{"top", tops, intHist(hc.Top)},
			{"left", lefts, intHist(hc.Left)},
		} {
			stat, df := chi2TwoSample(c.ours, c.tv)
			z := chi2Z(stat, df)
			t.Logf("%dx%d scale %v: %s chi2 %.1f, df %d, z %.2f", hc.H, hc.W, hc.Scale, c.name, stat, df, z)
			if z > maxZ {
				t.Errorf("%dx%d scale %v ratio %v: %s distribution differs from torchvision's (chi2 %.1f, df %d, z %.2f)", hc.H, hc.W, hc.Scale, hc.Ratio, c.name, stat, df, z)
			}
		}
		if hc.H != hc.W {
			// Where the fallback fires, its centre crop is the most
			// frequent size on both sides.
			tvTop, ourTop := mode(hc.Sizes), mode(sizes)
			if tvTop != ourTop {
				t.Errorf("%dx%d: most frequent crop %s, torchvision's %s", hc.H, hc.W, ourTop, tvTop)
			}
			t.Logf("%dx%d: fallback-size %s in %.3f of torchvision's draws, %.3f of ours", hc.H, hc.W, tvTop,
				float64(hc.Sizes[tvTop])/float64(hc.N), float64(sizes[ourTop])/n)
		}
	}
	// The test can tell a slightly different scale range apart.
	hc := f.CropHists[0]
	sizes, _, _ := cropDraws(99, n, hc.H, hc.W, [2]float64{hc.Scale[0] + 0.02, hc.Scale[1]}, hc.Ratio)
	if stat, df := chi2TwoSample(sizes, hc.Sizes); chi2Z(stat, df) < 3*maxZ {
		t.Errorf("scale %v vs torchvision's %v: z %.2f, the test has too little power", [2]float64{hc.Scale[0] + 0.02, hc.Scale[1]}, hc.Scale, chi2Z(stat, df))
	}
}

func mode(h map[string]int) string {
	best, arg := -1, ""
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if h[k] > best {
			best, arg = h[k], k
		}
	}
	return arg
}

// hueOf returns the HSV hue of an RGB colour in turns, [0, 1).
func hueOf(r, g, b float64) float64 {
	mx, mn := math.Max(r, math.Max(g, b)), math.Min(r, math.Min(g, b))
	c := mx - mn
	var h float64
	switch mx {
	case r:
		h = (g - b) / c
	case g:
		h = 2 + (b-r)/c
	default:
		h = 4 + (r-g)/c
	}
	return math.Mod(h/6+1, 1)
}

// jitterProbe isolates one ColorJitter op on a tiny image whose output
// reveals the factor drawn.
type jitterProbe struct {
	op      string
	jitter  func(j *Jitter) Jitter
	src     []uint8
	h, w, c int
	factor  func(out []float32) float64
	rng     func(r jitterRange) [2]float64
}

var jitterProbes = []jitterProbe{
	{
		op:     "brightness",
		jitter: func(j *Jitter) Jitter { return Jitter{Brightness: j.Brightness, P: 1} },
		src:    []uint8{128}, h: 1, w: 1, c: 1,
		factor: func(o []float32) float64 { return float64(o[0]) / (128.0 / 255) },
		rng:    func(r jitterRange) [2]float64 { return r.Brightness },
	},
	{
		// Mean 128/255; pixel 0 is 64/255: out0 = mean - f*64/255.
		op:     "contrast",
		jitter: func(j *Jitter) Jitter { return Jitter{Contrast: j.Contrast, P: 1} },
		src:    []uint8{64, 192}, h: 1, w: 2, c: 1,
		factor: func(o []float32) float64 { return (128.0/255 - float64(o[0])) / (64.0 / 255) },
		rng:    func(r jitterRange) [2]float64 { return r.Contrast },
	},
	{
		// Saturation scales the differences between channels by f.
		op:     "saturation",
		jitter: func(j *Jitter) Jitter { return Jitter{Saturation: j.Saturation, P: 1} },
		src:    []uint8{150, 100, 50}, h: 1, w: 1, c: 3,
		factor: func(o []float32) float64 { return float64(o[0]-o[2]) / (100.0 / 255) },
		rng:    func(r jitterRange) [2]float64 { return r.Saturation },
	},
	{
		// The source's hue is 1/12 of a turn.
		op:     "hue",
		jitter: func(j *Jitter) Jitter { return Jitter{Hue: j.Hue, P: 1} },
		src:    []uint8{150, 100, 50}, h: 1, w: 1, c: 3,
		factor: func(o []float32) float64 {
			d := hueOf(float64(o[0]), float64(o[1]), float64(o[2])) - 1.0/12
			return d - math.Floor(d+0.5)
		},
		rng: func(r jitterRange) [2]float64 { return r.Hue },
	},
}

// TestJitterFactorsMatchTorchvision draws each ColorJitter op of each
// preset alone through Apply, recovers the factor from the output and
// checks that it is uniform on the range torchvision's ColorJitter derives
// from the same strengths ([max(0, 1-x), 1+x], hue [-h, h]): every factor
// inside, both ends reached, and a Kolmogorov-Smirnov distance below the
// 1e-4 critical value.
func TestJitterFactorsMatchTorchvision(t *testing.T) {
	f := parityFixtures(t)
	const n = 4000
	for _, pc := range []struct {
		name string
		p    *Pipeline
	}{
		{"paper", Paper(32, nil, nil)},
		{"mocov2", MoCoV2(32, nil, nil)},
		{"simclr32", SimCLR(32, nil, nil)},
		{"simclr96", SimCLR(96, nil, nil)},
	} {
		j := pc.p.Jitter
		var rg *jitterRange
		for i, r := range f.JitterRanges {
			if r.Strengths == [4]float64{j.Brightness, j.Contrast, j.Saturation, j.Hue} {
				rg = &f.JitterRanges[i]
			}
		}
		if rg == nil {
			t.Errorf("%s: no torchvision ColorJitter ranges for strengths %+v in parity.json", pc.name, *j)
			continue
		}
		for _, pr := range jitterProbes {
			jit := pr.jitter(j)
			p := &Pipeline{Jitter: &jit}
			lo, hi := pr.rng(*rg)[0], pr.rng(*rg)[1]
			dst := make([]float32, pr.h*pr.w*pr.c)
			var ws Workspace
			fs := make([]float64, n)
			for i := range fs {
				r := splitmix.New(splitmix.Derive(13, uint64(i)))
				p.Apply(dst, pr.src, pr.h, pr.w, pr.c, &r, &ws)
				fs[i] = pr.factor(dst)
			}
			sort.Float64s(fs)
			const eps = 1e-5 // recovering a factor from float32 pixels
			if fs[0] < lo-eps || fs[n-1] > hi+eps {
				t.Errorf("%s %s: factors in [%.6f, %.6f], torchvision's range [%v, %v]", pc.name, pr.op, fs[0], fs[n-1], lo, hi)
			}
			if gap := 0.005 * (hi - lo); fs[0] > lo+gap || fs[n-1] < hi-gap {
				t.Errorf("%s %s: factors in [%.6f, %.6f] do not reach the ends of torchvision's range [%v, %v]", pc.name, pr.op, fs[0], fs[n-1], lo, hi)
			}
			var ks float64
			for i, v := range fs {
				u := (v - lo) / (hi - lo)
				ks = max(ks, math.Abs(u-float64(i)/n), math.Abs(u-float64(i+1)/n))
			}
			if ks*math.Sqrt(n) > 2.22 {
				t.Errorf("%s %s: factors not uniform on [%v, %v]: KS distance %.4f (n %d)", pc.name, pr.op, lo, hi, ks, n)
			}
		}
	}
}

// TestJitterOrderIsAUniformPermutation checks that ColorJitter's four ops
// run in the order of a uniform random permutation drawn for each view, as
// torchvision's torch.randperm(4), and that the order matters for the
// result (so that the check is not vacuous).
func TestJitterOrderIsAUniformPermutation(t *testing.T) {
	j := &Jitter{Brightness: 0.8, Contrast: 0.8, Saturation: 0.8, Hue: 0.2, P: 1}
	src := testImage(4, 5, 3)
	const n = 24000
	counts := map[string]int{}
	reordered := 0
	for i := range n {
		r := splitmix.New(splitmix.Derive(17, uint64(i)))
		replay := r
		m := FromHWC(src, 4, 5, 3)
		applyJitter(m, j, &r)

		order := replay.Perm4()
		counts[fmt.Sprint(order)]++
		bf := float32(replay.Uniform(0.2, 1.8))
		cf := float32(replay.Uniform(0.2, 1.8))
		sf := float32(replay.Uniform(0.2, 1.8))
		hf := float32(replay.Uniform(-0.2, 0.2))
		run := func(order [4]int) []float32 {
			w := FromHWC(src, 4, 5, 3)
			for _, op := range order {
				switch op {
				case 0:
					AdjustBrightness(w, bf)
				case 1:
					AdjustContrast(w, cf)
				case 2:
					AdjustSaturation(w, sf)
				case 3:
					AdjustHue(w, hf)
				}
			}
			return w.Pix
		}
		want := run(order)
		for k := range want {
			if m.Pix[k] != want[k] {
				t.Fatalf("seed %d: applyJitter differs from the ops run in the drawn order %v at %d", i, order, k)
			}
		}
		if fixed := run([4]int{0, 1, 2, 3}); fmt.Sprint(fixed) != fmt.Sprint(want) {
			reordered++
		}
	}
	if len(counts) != 24 {
		t.Fatalf("%d distinct orders, want 24", len(counts))
	}
	uniform := map[string]int{}
	for k := range counts {
		uniform[k] = n / 24
	}
	if stat, df := chi2TwoSample(counts, uniform); chi2Z(stat, df) > maxZ {
		t.Errorf("orders not uniform: %v (chi2 %.1f, df %d)", counts, stat, df)
	}
	if reordered < n/2 {
		t.Errorf("the order changed the result for only %d of %d views", reordered, n)
	}
}

// recipe is an augmentation recipe as its source states it.
type recipe struct {
	cropScale [2]float64 // (0, 0): no RandomResizedCrop
	flip      float64
	jitter    [4]float64 // brightness, contrast, saturation, hue strengths
	jitterP   float64
	gray      float64
	blurP     float64 // 0: no blur
	blurSigma [2]float64
	// None of these recipes solarizes (BYOL's does), and the pipeline has
	// no solarize op.
}

// TestPresetsFollowRecipes checks each preset's parameters against the
// recipe it cites, then draws 20000 views of a probe image per random op
// through Apply to check that each op fires with the recipe's
// probability (within 4 standard errors).
//
// Sources: MoCo v2 is facebookresearch/moco main_moco.py --aug-plus
// (RandomResizedCrop(224, scale=(0.2, 1.)), RandomApply(ColorJitter(0.4,
// 0.4, 0.4, 0.1), p=0.8), RandomGrayscale(p=0.2), RandomApply(GaussianBlur
// sigma [.1, 2.], p=0.5), RandomHorizontalFlip()). SimCLR is Chen et al.
// 2020, Appendix A (crop scale (0.08, 1), flip 0.5, ColorJitter(0.8s, 0.8s,
// 0.8s, 0.2s) with p 0.8, RandomGrayscale(0.2), blur p 0.5 with sigma in
// [0.1, 2]) and B.9 (CIFAR-10: s = 0.5, no blur). The paper (DUEL) is
// Appendix E.2: colour distortion (jitter and grayscale) with p 0.5 and
// horizontal flip with p 0.75, otherwise "as suggested by Chen et al.";
// presets.go reads "colour distortion with p 0.5" as the jitter's
// RandomApply and keeps SimCLR's RandomGrayscale(0.2) and crop.
func TestPresetsFollowRecipes(t *testing.T) {
	tvRatio := [2]float64{3.0 / 4, 4.0 / 3}
	for _, c := range []struct {
		name string
		p    *Pipeline
		want recipe
	}{
		{"paper", Paper(32, nil, nil), recipe{cropScale: [2]float64{0.08, 1}, flip: 0.75, jitter: [4]float64{0.4, 0.4, 0.4, 0.1}, jitterP: 0.5, gray: 0.2}},
		{"mocov2", MoCoV2(32, nil, nil), recipe{cropScale: [2]float64{0.2, 1}, flip: 0.5, jitter: [4]float64{0.4, 0.4, 0.4, 0.1}, jitterP: 0.8, gray: 0.2, blurP: 0.5, blurSigma: [2]float64{0.1, 2}}},
		{"simclr32", SimCLR(32, nil, nil), recipe{cropScale: [2]float64{0.08, 1}, flip: 0.5, jitter: [4]float64{0.4, 0.4, 0.4, 0.1}, jitterP: 0.8, gray: 0.2}},
		{"simclr96", SimCLR(96, nil, nil), recipe{cropScale: [2]float64{0.08, 1}, flip: 0.5, jitter: [4]float64{0.8, 0.8, 0.8, 0.2}, jitterP: 0.8, gray: 0.2, blurP: 0.5, blurSigma: [2]float64{0.1, 2}}},
		{"none", None(32, nil, nil), recipe{}},
	} {
		p, w := c.p, c.want
		if (p.Crop != nil) != (w.cropScale[1] > 0) || p.Crop != nil && (p.Crop.Scale != w.cropScale || p.Crop.Ratio != tvRatio) {
			t.Errorf("%s: crop %+v, recipe scale %v ratio %v", c.name, p.Crop, w.cropScale, tvRatio)
		}
		if p.FlipP != w.flip || p.GrayP != w.gray {
			t.Errorf("%s: flip %v gray %v, recipe %v %v", c.name, p.FlipP, p.GrayP, w.flip, w.gray)
		}
		var jit [4]float64
		var jitP float64
		if p.Jitter != nil {
			jit, jitP = [4]float64{p.Jitter.Brightness, p.Jitter.Contrast, p.Jitter.Saturation, p.Jitter.Hue}, p.Jitter.P
		}
		if jit != w.jitter || jitP != w.jitterP {
			t.Errorf("%s: jitter %v p %v, recipe %v p %v", c.name, jit, jitP, w.jitter, w.jitterP)
		}
		var blurP float64
		var sigma [2]float64
		if p.Blur != nil {
			blurP, sigma = p.Blur.P, p.Blur.Sigma
		}
		if blurP != w.blurP || sigma != w.blurSigma {
			t.Errorf("%s: blur p %v sigma %v, recipe p %v sigma %v", c.name, blurP, sigma, w.blurP, w.blurSigma)
		}

		// Each random op alone, so that its effect is visible.
		for _, probe := range []struct {
			op    string
			q     Pipeline
			src   []uint8
			h, w  int
			c     int
			fired func(in, out []float32) bool
			want  float64
		}{
			{"flip", Pipeline{FlipP: p.FlipP}, []uint8{0, 255}, 1, 2, 1,
				func(in, out []float32) bool { return out[0] != in[0] }, w.flip},
			{"jitter", Pipeline{Jitter: p.Jitter}, []uint8{150, 100, 50}, 1, 1, 3,
				func(in, out []float32) bool { return fmt.Sprint(in) != fmt.Sprint(out) }, w.jitterP},
			{"grayscale", Pipeline{GrayP: p.GrayP}, []uint8{150, 100, 50}, 1, 1, 3,
				func(in, out []float32) bool { return out[0] == out[1] && out[1] == out[2] }, w.gray},
			{"blur", Pipeline{Blur: p.Blur}, []uint8{0, 0, 0, 0, 255, 0, 0, 0, 0}, 3, 3, 1,
				func(in, out []float32) bool { return fmt.Sprint(in) != fmt.Sprint(out) }, w.blurP},
		} {
			in := make([]float32, len(probe.src))
			for i, v := range probe.src {
				// As the uint8 path computes it (Size 0: identity resize).
				in[i] = float32(v) * (1.0 / 255)
			}
			const n = 20000
			out := make([]float32, len(in))
			var ws Workspace
			hits := 0
			for i := range n {
				r := splitmix.New(splitmix.Derive(19, uint64(i)))
				probe.q.Apply(out, probe.src, probe.h, probe.w, probe.c, &r, &ws)
				if probe.fired(in, out) {
					hits++
				}
			}
			se := math.Sqrt(probe.want*(1-probe.want)/n) + 1e-12
			if got := float64(hits) / n; math.Abs(got-probe.want) > 4*se {
				t.Errorf("%s: %s fired in %.4f of the views, recipe %v (± %.4f)", c.name, probe.op, got, probe.want, 4*se)
			}
		}
	}
}
